(** * sigma~ = RN o sigma and sigma~' = RN o sigma', and proved facts about them

    [sigma_tilde F A z] is the correctly rounded activation of condcheck's "exact"
    implementation (SPEC 2.2), [dsigma_tilde F A z] its rounded derivative.

    A [fact] says what RN does to a function on a closed interval [lo, hi] of reals: every
    value there rounds to the same finite value [v] ([Fin v]), or every one overflows ([Ovf]).
    A point is the interval [z, z].  Facts are proved once each (from real bounds, by the
    [interval] tactic, or exactly); [lookup] then reads them by computation, and [lookup_sound]
    turns what it reads back into a statement about RN. *)

From Coq Require Import ZArith Reals Lia Lra List Bool.
From Flocq Require Import Core Operations.
From Condcheck Require Import Format Dyadic Activations.
Open Scope R_scope.

Definition sigma_tilde (F : format) (A : activation) (z : R) : R := RN F (sigma A z).
Definition dsigma_tilde (F : format) (A : activation) (z : R) : R := RN F (dsigma A z).

(** ** Rounding results *)

Inductive rres := Fin (v : dyadic) | Ovf.

Definition rnd_is (F : format) (y : R) (r : rres) : Prop :=
  match r with
  | Fin v => RN F y = F2R v /\ Rabs (F2R v) <= Omega F
  | Ovf => Omega F < Rabs (RN F y)
  end.

Lemma rnd_is_fin_no_overflow : forall F y v, rnd_is F y (Fin v) -> no_overflow F y.
Proof. intros F y v [H1 H2]. unfold no_overflow. now rewrite H1. Qed.

Lemma no_overflow_rnd_is : forall F y r, no_overflow F y -> rnd_is F y r ->
  exists v, r = Fin v.
Proof. intros F y [v|] H1 H2; [now exists v|]. unfold no_overflow in H1. simpl in H2. lra. Qed.

(** ** Facts *)

Record fact := Fact { fact_lo : dyadic; fact_hi : dyadic; fact_res : rres }.

Definition fact_holds (F : format) (g : R -> R) (f : fact) : Prop :=
  forall x, F2R (fact_lo f) <= x <= F2R (fact_hi f) -> rnd_is F (g x) (fact_res f).

Fixpoint lookup (fs : list fact) (z : dyadic) : option rres :=
  match fs with
  | nil => None
  | f :: fs' => if Dleb (fact_lo f) z && Dleb z (fact_hi f) then Some (fact_res f) else lookup fs' z
  end.

Lemma lookup_sound : forall F g fs z r,
  Forall (fact_holds F g) fs -> lookup fs z = Some r -> rnd_is F (g (F2R z)) r.
Proof.
intros F g fs z r Hall. induction Hall as [|f fs Hf Hall IH]; simpl; [easy|].
destruct (Dleb (fact_lo f) z && Dleb z (fact_hi f)) eqn:E.
- intros H. injection H as <-. apply andb_prop in E as [E1 E2].
  apply Dleb_iff in E1, E2. now apply Hf.
- exact IH.
Qed.

(** [lookup] at a value equal to [z]'s (facts are about reals, so any representation works). *)
Lemma lookup_sound_at : forall F g fs z r x,
  Forall (fact_holds F g) fs -> lookup fs z = Some r -> F2R z = x -> rnd_is F (g x) r.
Proof. intros F g fs z r x H1 H2 <-. now apply (lookup_sound F g fs). Qed.

(** ** Proving facts *)

Section Proving.
Variable F : format.
Hypothesis Hwf : wf_format F = true.
Variable g : R -> R.

(** Every real in [lo, hi] rounds to v when lo and hi do (RN is monotone). *)
Lemma fact_by_bounds : forall a b lo hi v,
  Deqb (rnd_d F lo) v && Deqb (rnd_d F hi) v && fin_b F v = true ->
  (forall x, F2R a <= x <= F2R b -> F2R lo <= g x <= F2R hi) ->
  fact_holds F g (Fact a b (Fin v)).
Proof.
intros a b lo hi v H Hb x Hx. simpl in Hx |- *.
apply andb_prop in H as [H H3]. apply andb_prop in H as [H1 H2].
split; [|now apply fin_b_iff].
apply RN_bracket with lo hi; auto.
Qed.

Lemma fact_point_by_bounds : forall z lo hi v,
  Deqb (rnd_d F lo) v && Deqb (rnd_d F hi) v && fin_b F v = true ->
  F2R lo <= g (F2R z) <= F2R hi ->
  fact_holds F g (Fact z z (Fin v)).
Proof.
intros z lo hi v H Hb. apply fact_by_bounds with lo hi; [exact H|].
intros x Hx. replace x with (F2R z) by lra. exact Hb.
Qed.

(** An exact value: g z = y for a dyadic y, rounded by computation. *)
Lemma fact_point_exact : forall z y v,
  Deqb (rnd_d F y) v && fin_b F v = true ->
  g (F2R z) = F2R y ->
  fact_holds F g (Fact z z (Fin v)).
Proof.
intros z y v H Hy. apply andb_prop in H as [H1 H2].
apply fact_point_by_bounds with y y; [now rewrite H1, H2|]. lra.
Qed.

(** Overflow above: everything at least lo rounds beyond Omega. *)
Lemma fact_overflow_above : forall a b lo,
  Dltb (f_Omega F) (rnd_d F lo) = true ->
  (forall x, F2R a <= x <= F2R b -> F2R lo <= g x) ->
  fact_holds F g (Fact a b Ovf).
Proof.
intros a b lo H Hb x Hx. simpl.
apply Dltb_iff in H. rewrite rnd_d_correct in H by exact Hwf.
assert (Hv := valid_exp_F F Hwf).
assert (RN F (F2R lo) <= RN F (g x)) by (apply round_le; auto with typeclass_instances).
fold (Omega F) in H. assert (0 < Omega F) by (apply wf_Omega_pos; exact Hwf).
rewrite Rabs_pos_eq; lra.
Qed.

(** Overflow below: everything at most hi rounds below -Omega. *)
Lemma fact_overflow_below : forall a b hi,
  Dltb (rnd_d F hi) (Fopp (f_Omega F)) = true ->
  (forall x, F2R a <= x <= F2R b -> g x <= F2R hi) ->
  fact_holds F g (Fact a b Ovf).
Proof.
intros a b hi H Hb x Hx. simpl.
apply Dltb_iff in H. rewrite rnd_d_correct, F2R_opp in H by exact Hwf.
assert (Hv := valid_exp_F F Hwf).
assert (RN F (g x) <= RN F (F2R hi)) by (apply round_le; auto with typeclass_instances).
fold (Omega F) in H. assert (0 < Omega F) by (apply wf_Omega_pos; exact Hwf).
rewrite Rabs_left; lra.
Qed.

End Proving.

(** ** Exact values at dyadic points (see Activations: the points where sigma or sigma' is dyadic) *)

Lemma pos_by_computation : forall z, Dltb Dzero z = true -> 0 < F2R z.
Proof. intros z H. apply Dltb_iff in H. now rewrite F2R_Dzero in H. Qed.
Lemma nonpos_by_computation : forall z, Dleb z Dzero = true -> F2R z <= 0.
Proof. intros z H. apply Dleb_iff in H. now rewrite F2R_Dzero in H. Qed.

Lemma F2R_one : F2R (Float radix2 1 0) = 1.
Proof. unfold F2R. cbn [Fnum Fexp]. rewrite Rmult_1_l. reflexivity. Qed.
Lemma F2R_half : F2R (Float radix2 1 (-1)) = 1 / 2.
Proof.
unfold F2R. cbn [Fnum Fexp]. change (-1)%Z with (- (1))%Z. rewrite (bpow_opp radix2 1), bpow_1.
change (IZR radix2) with 2. field.
Qed.
Lemma F2R_quarter : F2R (Float radix2 1 (-2)) = 1 / 4.
Proof.
unfold F2R. cbn [Fnum Fexp]. change (-2)%Z with (- (1 + 1))%Z. rewrite (bpow_opp radix2 (1 + 1)).
rewrite bpow_plus, bpow_1. change (IZR radix2) with 2. field.
Qed.

Lemma relu_pos_exact : forall z, Dltb Dzero z = true -> relu (F2R z) = F2R z.
Proof. intros z H. apply relu_gt0, pos_by_computation, H. Qed.
Lemma relu_nonpos_exact : forall z, Dleb z Dzero = true -> relu (F2R z) = F2R Dzero.
Proof. intros z H. rewrite F2R_Dzero. apply relu_le0, nonpos_by_computation, H. Qed.
Lemma drelu_pos_exact : forall z, Dltb Dzero z = true -> drelu (F2R z) = F2R (Float radix2 1 0).
Proof. intros z H. rewrite F2R_one. apply drelu_gt0, pos_by_computation, H. Qed.
Lemma drelu_nonpos_exact : forall z, Dleb z Dzero = true -> drelu (F2R z) = F2R Dzero.
Proof. intros z H. rewrite F2R_Dzero. apply drelu_le0, nonpos_by_computation, H. Qed.
Lemma elu_pos_exact : forall z, Dltb Dzero z = true -> elu (F2R z) = F2R z.
Proof. intros z H. apply elu_gt0, pos_by_computation, H. Qed.
Lemma delu_pos_exact : forall z, Dltb Dzero z = true -> delu (F2R z) = F2R (Float radix2 1 0).
Proof. intros z H. rewrite F2R_one. apply delu_gt0, pos_by_computation, H. Qed.

Lemma elu_0_exact : elu (F2R Dzero) = F2R Dzero.
Proof. rewrite F2R_Dzero. apply elu_0. Qed.
Lemma delu_0_exact : delu (F2R Dzero) = F2R (Float radix2 1 0).
Proof. rewrite F2R_Dzero, F2R_one. apply delu_0. Qed.
Lemma gelu_0_exact : gelu (F2R Dzero) = F2R Dzero.
Proof. rewrite F2R_Dzero. apply gelu_0. Qed.
Lemma dgelu_0_exact : dgelu (F2R Dzero) = F2R (Float radix2 1 (-1)).
Proof. rewrite F2R_Dzero, F2R_half. apply dgelu_0. Qed.
Lemma swish_0_exact : swish (F2R Dzero) = F2R Dzero.
Proof. rewrite F2R_Dzero. apply swish_0. Qed.
Lemma dswish_0_exact : dswish (F2R Dzero) = F2R (Float radix2 1 (-1)).
Proof. rewrite F2R_Dzero, F2R_half. apply dswish_0. Qed.
Lemma sigmoid_0_exact : sigmoid (F2R Dzero) = F2R (Float radix2 1 (-1)).
Proof. rewrite F2R_Dzero, F2R_half. apply sigmoid_0. Qed.
Lemma dsigmoid_0_exact : dsigmoid (F2R Dzero) = F2R (Float radix2 1 (-2)).
Proof. rewrite F2R_Dzero, F2R_quarter. apply dsigmoid_0. Qed.
Lemma tanh_0_exact : tanh (F2R Dzero) = F2R Dzero.
Proof. rewrite F2R_Dzero. apply tanh_0. Qed.
Lemma dtanh_0_exact : dtanh (F2R Dzero) = F2R (Float radix2 1 0).
Proof. rewrite F2R_Dzero, F2R_one. apply dtanh_0. Qed.

(** Tactic support for generated proofs: a dyadic as a real that [interval] reads. *)
Ltac dyadic_to_R := unfold F2R in *; cbn [Fnum Fexp] in *.
