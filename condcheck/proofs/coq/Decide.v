(** * Reading proved facts: the shared part of the condition checkers

    For an activation A on a format F, [fs] holds proved facts about sigma and [fd] about sigma'.
    [sfin z] / [dfin z] read the finite rounded value at a dyadic point z, when a fact covers z.
    A checker of a condition that holds reads them at the witness points (and, for Condition 1's
    dead tail, at every value of F below z_d).  A checker of a condition that fails needs facts at
    every value of F ([complete]): then every clause over F is decided by computation. *)

From Coq Require Import ZArith Reals Lia Lra List Bool.
From Flocq Require Import Core Operations.
From Condcheck Require Import Format Dyadic Activations Rounded.
Import ListNotations.
Open Scope R_scope.

Section Decide.
Variable F : format.
Hypothesis Hwf : wf_format F = true.
Variable A : activation.
Variables fs fd : list fact.
Hypothesis Hfs : Forall (fact_holds F (sigma A)) fs.
Hypothesis Hfd : Forall (fact_holds F (dsigma A)) fd.

Definition fin_of (r : option rres) : option dyadic :=
  match r with Some (Fin v) => Some v | _ => None end.

Definition sfin (z : dyadic) : option dyadic := fin_of (lookup fs z).
Definition dfin (z : dyadic) : option dyadic := fin_of (lookup fd z).

Definition is_Some {T} (o : option T) : bool := match o with Some _ => true | None => false end.

(** The value read is equal to [b] (false when nothing finite is known). *)
Definition opt_eqb (o : option dyadic) (b : dyadic) : bool :=
  match o with Some v => Deqb v b | None => false end.

Lemma lookup_ext : forall gs z1 z2, F2R z1 = F2R z2 -> lookup gs z1 = lookup gs z2.
Proof.
induction gs as [|f gs IH]; intros z1 z2 H; simpl; [reflexivity|].
assert (E : forall a b : dyadic, F2R a = F2R b -> Dleb a (fact_lo f) = Dleb b (fact_lo f) /\
                                 Dleb (fact_lo f) a = Dleb (fact_lo f) b).
{ intros a b Hab. unfold Dleb. rewrite !Dcmp_correct, Hab. split; reflexivity. }
unfold Dleb. rewrite !Dcmp_correct, H. rewrite (IH z1 z2 H). reflexivity.
Qed.

Lemma sfin_ext : forall z1 z2, F2R z1 = F2R z2 -> sfin z1 = sfin z2.
Proof. intros z1 z2 H. unfold sfin. now rewrite (lookup_ext fs z1 z2 H). Qed.
Lemma dfin_ext : forall z1 z2, F2R z1 = F2R z2 -> dfin z1 = dfin z2.
Proof. intros z1 z2 H. unfold dfin. now rewrite (lookup_ext fd z1 z2 H). Qed.

Lemma sfin_sound : forall z v, sfin z = Some v ->
  sigma_tilde F A (F2R z) = F2R v /\ no_overflow F (sigma A (F2R z)) /\ Rabs (F2R v) <= Omega F.
Proof.
intros z v H. unfold sfin, fin_of in H.
destruct (lookup fs z) as [[w|]|] eqn:E; try discriminate. injection H as <-.
destruct (lookup_sound F _ fs z _ Hfs E) as [H1 H2].
unfold sigma_tilde, no_overflow. rewrite H1. auto.
Qed.

Lemma dfin_sound : forall z v, dfin z = Some v ->
  dsigma_tilde F A (F2R z) = F2R v /\ no_overflow F (dsigma A (F2R z)) /\ Rabs (F2R v) <= Omega F.
Proof.
intros z v H. unfold dfin, fin_of in H.
destruct (lookup fd z) as [[w|]|] eqn:E; try discriminate. injection H as <-.
destruct (lookup_sound F _ fd z _ Hfd E) as [H1 H2].
unfold dsigma_tilde, no_overflow. rewrite H1. auto.
Qed.

(** ** Complete tables: facts at every value of F *)

Definition complete : bool :=
  forallb (fun z => is_Some (lookup fs z) && is_Some (lookup fd z)) (enum F).

Hypothesis Hcomplete : complete = true.

(** At a value of F that does not overflow, the table reads its rounded value. *)
Lemma sfin_complete : forall z, in_format F (F2R z) -> no_overflow F (sigma A (F2R z)) ->
  exists v, sfin z = Some v /\ F2R v = sigma_tilde F A (F2R z).
Proof.
intros z Hz Hno.
destruct (enum_complete F Hwf _ Hz) as [d [Hd Hdz]].
unfold complete in Hcomplete. rewrite forallb_forall in Hcomplete.
specialize (Hcomplete d Hd). apply andb_prop in Hcomplete as [H1 _].
rewrite (sfin_ext z d) by now rewrite Hdz.
unfold sfin, fin_of. destruct (lookup fs d) as [r|] eqn:E; [|discriminate].
assert (Hr := lookup_sound F _ fs d r Hfs E). rewrite Hdz in Hr.
destruct r as [v|].
- exists v. split; [reflexivity|]. destruct Hr as [Hr _]. unfold sigma_tilde. now rewrite Hr.
- unfold no_overflow in Hno. simpl in Hr. lra.
Qed.

Lemma dfin_complete : forall z, in_format F (F2R z) -> no_overflow F (dsigma A (F2R z)) ->
  exists v, dfin z = Some v /\ F2R v = dsigma_tilde F A (F2R z).
Proof.
intros z Hz Hno.
destruct (enum_complete F Hwf _ Hz) as [d [Hd Hdz]].
unfold complete in Hcomplete. rewrite forallb_forall in Hcomplete.
specialize (Hcomplete d Hd). apply andb_prop in Hcomplete as [_ H1].
rewrite (dfin_ext z d) by now rewrite Hdz.
unfold dfin, fin_of. destruct (lookup fd d) as [r|] eqn:E; [|discriminate].
assert (Hr := lookup_sound F _ fd d r Hfd E). rewrite Hdz in Hr.
destruct r as [v|].
- exists v. split; [reflexivity|]. destruct Hr as [Hr _]. unfold dsigma_tilde. now rewrite Hr.
- unfold no_overflow in Hno. simpl in Hr. lra.
Qed.

End Decide.

(** ** Powers of two among the values of a format *)

Section Pow2.
Variable F : format.
Hypothesis Hwf : wf_format F = true.

(** Is [v] a positive power of two 2^k with e_min - M <= k <= e_max (every positive power of two
    that is a finite rounded value is one of these)? *)
Definition is_pow2_b (v : dyadic) : bool :=
  existsb (fun k => Deqb v (Dpow2 k)) (zrange (f_emin F - f_M F) (f_emax F)).

Lemma is_pow2_b_sound : forall v, is_pow2_b v = true -> exists k, F2R v = bpow radix2 k.
Proof.
intros v H. apply existsb_exists in H as [k [_ Hk]]. apply Deqb_iff in Hk.
exists k. now rewrite Hk, F2R_Dpow2.
Qed.

Lemma generic_pos_ge : forall x, generic_format radix2 (fexp F) x -> 0 < x ->
  bpow radix2 (f_emin F - f_M F) <= x.
Proof.
intros x Hg Hx. pose proof (prec_gt_0_F F Hwf).
destruct (FLT_format_generic radix2 (f_emin F - f_M F) (prec F) x Hg) as [[m e] Hxm _ He].
simpl in He. rewrite Hxm in Hx |- *.
apply gt_0_F2R in Hx.
apply Rle_trans with (bpow radix2 e); [now apply bpow_le|].
rewrite <- F2R_bpow. apply F2R_le. simpl. lia.
Qed.

Lemma is_pow2_b_complete : forall y k, no_overflow F y -> RN F y = bpow radix2 k ->
  forall v, F2R v = RN F y -> is_pow2_b v = true.
Proof.
intros y k Hno Hk v Hv. apply existsb_exists. exists k. split.
- apply In_zrange. split.
  + apply le_bpow with radix2. rewrite <- Hk. apply generic_pos_ge.
    * pose proof (valid_exp_F F Hwf). unfold RN. apply generic_format_round; auto with typeclass_instances.
    * rewrite Hk. apply bpow_gt_0.
  + apply Z.lt_succ_r. apply lt_bpow with radix2.
    apply Rle_lt_trans with (Omega F); [|now apply wf_Omega_lt].
    unfold no_overflow in Hno. rewrite Hk, Rabs_pos_eq in Hno by apply bpow_ge_0. exact Hno.
- apply Deqb_iff. now rewrite Hv, Hk, F2R_Dpow2.
Qed.

(** -Omega / 2, exactly *)
Definition neg_half_Omega : dyadic :=
  Float radix2 (- Fnum (f_Omega F)) (Fexp (f_Omega F) - 1).

Lemma F2R_neg_half_Omega : F2R neg_half_Omega = - Omega F / 2.
Proof.
unfold neg_half_Omega, Omega. destruct (f_Omega F) as [m e]. unfold F2R. simpl.
rewrite opp_IZR. replace (e - 1)%Z with (e + -1)%Z by ring. rewrite bpow_plus.
replace (bpow radix2 (-1)) with (/ 2) by (simpl; unfold Z.pow_pos; simpl; field). field.
Qed.

End Pow2.
