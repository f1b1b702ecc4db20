(** * Condition 1's dead tail on a wide format: a chain of interval facts

    A format of more than 8 bits has too many values to enumerate inside Coq.  Its dead tail
    (sigma~(z) = L and sigma~'(z) = 0 for every value z of F with z <= z_d) is proved instead
    from facts about whole closed intervals of reals ([Rounded.fact]): each fact says that RN
    maps every real of [lo, hi] to the same value, and is proved from real bounds by [interval].
    [chain_b lo hi v fs] checks by computation that the facts [fs] follow each other without a
    gap (each starts at or below the end of the one before), start at or below [lo], reach [hi]
    and all round to [v]; [chain_sound] turns that into a statement about every real of
    [lo, hi].  A value z of F lies in [-Omega, z_d], so two chains from -Omega to z_d (for
    sigma with L, for sigma' with 0) prove clause (a) ([dead_cover_sound]). *)

From Coq Require Import ZArith Reals Lia Lra List Bool.
From Flocq Require Import Core Operations.
From Condcheck Require Import Format Dyadic Activations Rounded.
Import ListNotations.
Open Scope R_scope.

Definition res_is (r : rres) (v : dyadic) : bool :=
  match r with Fin w => Deqb w v | Ovf => false end.

Fixpoint chain_b (lo hi v : dyadic) (fs : list fact) : bool :=
  match fs with
  | nil => false
  | f :: fs' => Dleb (fact_lo f) lo && res_is (fact_res f) v &&
                (Dleb hi (fact_hi f) || chain_b (fact_hi f) hi v fs')
  end.

Section Chain.
Variable F : format.
Variable g : R -> R.

Lemma chain_sound : forall fs lo hi v, Forall (fact_holds F g) fs -> chain_b lo hi v fs = true ->
  forall x, F2R lo <= x <= F2R hi -> RN F (g x) = F2R v /\ Rabs (F2R v) <= Omega F.
Proof.
induction fs as [|f fs IH]; intros lo hi v Hall H x Hx; simpl in H; [discriminate|].
inversion Hall as [|f' fs' Hf Hfs]; subst.
rewrite !andb_true_iff in H. destruct H as [[Hlo Hres] Hnext].
apply Dleb_iff in Hlo.
destruct (Rle_lt_dec x (F2R (fact_hi f))) as [Hle|Hgt].
- assert (Hr := Hf x (conj (Rle_trans _ _ _ Hlo (proj1 Hx)) Hle)).
  destruct (fact_res f) as [w|]; simpl in Hres; [|discriminate].
  apply Deqb_iff in Hres. simpl in Hr. rewrite <- Hres. exact Hr.
- apply orb_true_iff in Hnext as [Hhi|Hch].
  + apply Dleb_iff in Hhi. lra.
  + apply (IH (fact_hi f) hi v Hfs Hch). lra.
Qed.

End Chain.

Section Dead.
Variable F : format.
Variable A : activation.

(** The dead tail up to [zd] with the value [L], from the chains [ts] (sigma) and [td] (sigma'). *)
Definition dead_cover (zd L : dyadic) (ts td : list fact) : bool :=
  chain_b (Fopp (f_Omega F)) zd L ts && chain_b (Fopp (f_Omega F)) zd Dzero td.

Lemma dead_cover_sound : forall zd L ts td,
  Forall (fact_holds F (sigma A)) ts -> Forall (fact_holds F (dsigma A)) td ->
  dead_cover zd L ts td = true ->
  forall z, in_format F z -> z <= F2R zd -> sigma_tilde F A z = F2R L /\ dsigma_tilde F A z = 0.
Proof.
intros zd L ts td Hs Hd H z [_ Hz] Hle.
apply andb_prop in H as [H1 H2].
assert (Hr : F2R (Fopp (f_Omega F)) <= z <= F2R zd).
{ rewrite F2R_opp. fold (Omega F). split; [|exact Hle]. apply Rabs_le_inv in Hz. lra. }
split.
- exact (proj1 (chain_sound F (sigma A) ts _ _ _ Hs H1 z Hr)).
- rewrite <- F2R_Dzero. exact (proj1 (chain_sound F (dsigma A) td _ _ _ Hd H2 z Hr)).
Qed.

End Dead.

(** ** Bounds at large |x|: exp in a range the [interval] tactic can add

    [interval] adds numbers exactly before rounding, so [1 + exp x] at x = -2^127 would need a
    shift by some 10^38 bits.  A generated proof bounds [exp (k x)] first, for x <= b, by a
    dyadic B with a moderate exponent ([exp_le_mul]), and then gives [interval] the activation
    written in terms of e = exp (k x) ([*_e] below), e in [0, B]. *)

Lemma exp_le_mul : forall k x b, 0 <= k -> x <= b -> exp (k * x) <= exp (k * b).
Proof.
intros k x b Hk Hx. destruct (Req_dec (k * x) (k * b)) as [E|E]; [rewrite E; lra|].
apply Rlt_le, exp_increasing. assert (k * x <= k * b) by (apply Rmult_le_compat_l; lra). lra.
Qed.

Lemma exp_range : forall k x b B, 0 <= k -> x <= b -> exp (k * b) <= B -> 0 <= exp (k * x) <= B.
Proof.
intros k x b B Hk Hx HB. split; [apply Rlt_le, exp_pos|].
apply Rle_trans with (exp (k * b)); [now apply exp_le_mul|exact HB].
Qed.

Lemma exp_opp_inv : forall x, exp (- x) = / exp x.
Proof.
intros x. assert (H3 : exp x * exp (- x) = 1) by (rewrite <- exp_plus; replace (x + - x) with 0 by ring; apply exp_0).
generalize (exp_pos x). intros P. apply (Rmult_eq_reg_l (exp x)); [rewrite H3; field|]; lra.
Qed.

Lemma exp_double : forall x, exp (2 * x) = exp x * exp x.
Proof. intros x. rewrite <- exp_plus. f_equal. ring. Qed.

Lemma tanh_e : forall x, tanh x = 1 - 2 / (exp (2 * x) + 1).
Proof.
intros x. rewrite tanh_exp, exp_double, exp_opp_inv. generalize (exp_pos x). intros P. field. split; nra.
Qed.

Lemma dtanh_e : forall x, dtanh x = 4 * exp (2 * x) / (exp (2 * x) + 1) ^ 2.
Proof.
intros x. rewrite dtanh_exp, exp_double, exp_opp_inv. generalize (exp_pos x). intros P. field. split; nra.
Qed.

Lemma sigmoid_e : forall x, sigmoid x = exp (1 * x) / (exp (1 * x) + 1).
Proof.
intros x. unfold sigmoid. rewrite Rmult_1_l, exp_opp_inv. generalize (exp_pos x). intros P. field. lra.
Qed.

Lemma dsigmoid_e : forall x, dsigmoid x = exp (1 * x) / (exp (1 * x) + 1) ^ 2.
Proof.
intros x. unfold dsigmoid. rewrite Rmult_1_l, exp_opp_inv. generalize (exp_pos x). intros P. field. lra.
Qed.

Lemma swish_e : forall x, swish x = x * exp (1 * x) / (exp (1 * x) + 1).
Proof.
intros x. unfold swish. rewrite Rmult_1_l, exp_opp_inv. generalize (exp_pos x). intros P. field. lra.
Qed.

Lemma dswish_e : forall x, dswish x =
  exp (1 * x) / (exp (1 * x) + 1) + x * exp (1 * x) / (exp (1 * x) + 1) ^ 2.
Proof.
intros x. unfold dswish. rewrite Rmult_1_l, exp_opp_inv. generalize (exp_pos x). intros P. field. lra.
Qed.

Lemma elu_e : forall x, x <= 0 -> elu x = exp (1 * x) - 1.
Proof. intros x H. rewrite Rmult_1_l. now apply elu_le0. Qed.

Lemma delu_e : forall x, x <= 0 -> delu x = exp (1 * x).
Proof. intros x H. rewrite Rmult_1_l. now apply delu_le0. Qed.

(** ** Facts read from a dead tail that is a premise

    Where the dead tail is a premise of the theorem (GELU on a wide format), the values at points
    of the tail (sigma~(-Omega), a witness below z_d) follow from it: no premise of their own. *)

Section FromDead.
Variable F : format.
Hypothesis Hwf : wf_format F = true.
Variable A : activation.
Variables zd L : dyadic.
Hypothesis Hdead : forall z, in_format F z -> z <= F2R zd ->
  sigma_tilde F A z = F2R L /\ dsigma_tilde F A z = 0.

Lemma dead_fact_sigma : forall z, is_value_b F z && Dleb z zd && fin_b F L = true ->
  fact_holds F (sigma A) (Fact z z (Fin L)).
Proof.
intros z Hb x Hx. rewrite !andb_true_iff in Hb. destruct Hb as [[H1 H2] H3].
simpl in Hx. replace x with (F2R z) by lra.
apply (is_value_b_sound F Hwf) in H1. apply Dleb_iff in H2. apply fin_b_iff in H3.
destruct (Hdead _ H1 H2) as [S _]. split; [exact S|exact H3].
Qed.

Lemma dead_fact_dsigma : forall z, is_value_b F z && Dleb z zd = true ->
  fact_holds F (dsigma A) (Fact z z (Fin Dzero)).
Proof.
intros z Hb x Hx. rewrite !andb_true_iff in Hb. destruct Hb as [H1 H2].
simpl in Hx. replace x with (F2R z) by lra.
apply (is_value_b_sound F Hwf) in H1. apply Dleb_iff in H2.
destruct (Hdead _ H1 H2) as [_ S]. simpl. rewrite F2R_Dzero. split; [exact S|].
rewrite Rabs_R0. apply Rlt_le, wf_Omega_pos; exact Hwf.
Qed.

End FromDead.
