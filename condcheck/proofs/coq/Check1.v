(** * Deciding Condition 1 from proved facts

    [check1] verifies a witness (z_d, the live, constant, zero and pass states) by computation:
    the dead tail (a) is checked at every value of F below z_d ([enum]).  [check1_sound] proves
    that when it returns true, Condition 1 holds.  [refute1] decides, from facts at every value of
    F, that no z_d satisfies all clauses; [refute1_sound] proves that Condition 1 then fails. *)

From Coq Require Import ZArith Reals Lia Lra List Bool.
From Flocq Require Import Core Operations.
From Condcheck Require Import Format Dyadic Activations Rounded Decide Condition1.
Import ListNotations.
Open Scope R_scope.

Section Check1.
Variable F : format.
Hypothesis Hwf : wf_format F = true.
Variable A : activation.
Variables fs fd : list fact.
Hypothesis Hfs : Forall (fact_holds F (sigma A)) fs.
Hypothesis Hfd : Forall (fact_holds F (dsigma A)) fd.

Notation sfin := (sfin fs).
Notation dfin := (dfin fd).
Let negOm := Fopp (f_Omega F).

Lemma F2R_negOm : F2R negOm = - Omega F.
Proof. unfold negOm. now rewrite F2R_opp. Qed.

(** Clause (a) at z_d for the value L: every value z <= z_d of F reads sigma~ = L, sigma~' = 0. *)
Definition dead_below (zd L : dyadic) : bool :=
  forallb (fun z => negb (Dleb z zd) || (opt_eqb (sfin z) L && opt_eqb (dfin z) Dzero)) (enum F).

Lemma dead_below_sound : forall zd L, dead_below zd L = true ->
  forall z, in_format F z -> z <= F2R zd -> sigma_tilde F A z = F2R L /\ dsigma_tilde F A z = 0.
Proof.
intros zd L H z Hz Hle.
destruct (enum_complete F Hwf z Hz) as [d [Hd <-]].
unfold dead_below in H. rewrite forallb_forall in H. specialize (H d Hd).
apply Dleb_iff in Hle. rewrite Hle in H. simpl in H. apply andb_prop in H as [H1 H2].
unfold opt_eqb in H1, H2.
destruct (sfin d) as [v|] eqn:E1; [|discriminate]. destruct (dfin d) as [w|] eqn:E2; [|discriminate].
apply Deqb_iff in H1, H2. rewrite F2R_Dzero in H2.
destruct (sfin_sound F A fs Hfs d v E1) as [S1 _]. destruct (dfin_sound F A fd Hfd d w E2) as [S2 _].
split; congruence.
Qed.

(** Every clause at the certificate's witness, with the rounded values it states; [dead] is the
    check of the dead tail (a): [dead_below] here, a chain of interval facts on a wide format
    ([Cover.dead_cover]), or [true] where the dead tail is a hypothesis of the theorem. *)
Definition check1_with (dead : bool) (w : witness1) : bool :=
  let zd := w1_z_d w in let L := w1_L w in
  opt_eqb (sfin negOm) L &&
  is_value_b F zd && Dleb (neg_half_Omega F) zd && dead &&
  is_value_b F (w1_live w) && Dltb zd (w1_live w) && opt_eqb (sfin (w1_live w)) (w1_sigma_live w) &&
  negb (Deqb (w1_sigma_live w) L) &&
  is_value_b F (w1_constant w) && opt_eqb (sfin (w1_constant w)) (w1_sigma_constant w) &&
  is_pow2_b F (w1_sigma_constant w) &&
  is_value_b F (w1_zero w) && opt_eqb (sfin (w1_zero w)) Dzero &&
  is_value_b F (w1_pass w) && Dltb zd (w1_pass w) && opt_eqb (dfin (w1_pass w)) (w1_dsigma_pass w) &&
  is_pow2_b F (Fabs (w1_dsigma_pass w)).

Definition check1 (w : witness1) : bool := check1_with (dead_below (w1_z_d w) (w1_L w)) w.

Lemma opt_eqb_sfin : forall z v, opt_eqb (sfin z) v = true ->
  sigma_tilde F A (F2R z) = F2R v /\ no_overflow F (sigma A (F2R z)).
Proof.
intros z v H. unfold opt_eqb in H. destruct (sfin z) as [u|] eqn:E; [|discriminate].
apply Deqb_iff in H. destruct (sfin_sound F A fs Hfs z u E) as [S [N _]]. rewrite <- H. auto.
Qed.

Lemma opt_eqb_dfin : forall z v, opt_eqb (dfin z) v = true ->
  dsigma_tilde F A (F2R z) = F2R v /\ no_overflow F (dsigma A (F2R z)).
Proof.
intros z v H. unfold opt_eqb in H. destruct (dfin z) as [u|] eqn:E; [|discriminate].
apply Deqb_iff in H. destruct (dfin_sound F A fd Hfd z u E) as [S [N _]]. rewrite <- H. auto.
Qed.

(** What [dead] must mean for [check1_with] to be sound: clause (a) at the witness. *)
Definition dead_tail_at (w : witness1) : Prop :=
  forall z, in_format F z -> z <= F2R (w1_z_d w) -> sigma_tilde F A z = F2R (w1_L w) /\ dsigma_tilde F A z = 0.

Theorem check1_with_sound : forall dead w, (dead = true -> dead_tail_at w) ->
  check1_with dead w = true -> Condition1_at F A w.
Proof.
intros dead w Hdead H. unfold check1_with in H. rewrite !andb_true_iff in H.
destruct H as [[[[[[[[[[[[[[[[H1 H2] H3] H4] H5] H6] H7] H8] H9] H10] H11] H12] H13] H14] H15] H16] H17].
destruct (opt_eqb_sfin negOm _ H1) as [SL NL]. rewrite F2R_negOm in SL, NL.
unfold Condition1_at. cbv zeta.
split; [now apply is_value_b_sound|].
split; [apply Dleb_iff in H3; now rewrite F2R_neg_half_Omega in H3|].
split; [exact NL|]. split; [exact SL|].
split; [exact (Hdead H4)|].
destruct (opt_eqb_sfin _ _ H7) as [S7 N7].
split; [now apply is_value_b_sound|]. split; [now apply Dltb_iff|]. split; [exact N7|]. split; [exact S7|].
split; [apply negb_true_iff, Deqb_false_iff in H8; exact H8|].
destruct (opt_eqb_sfin _ _ H10) as [S10 N10].
split; [now apply is_value_b_sound|]. split; [exact N10|]. split; [exact S10|].
split; [now apply (is_pow2_b_sound F)|].
destruct (opt_eqb_sfin _ _ H13) as [S13 _].
split; [now apply is_value_b_sound|]. split; [now rewrite S13, F2R_Dzero|].
destruct (opt_eqb_dfin _ _ H16) as [S16 N16].
split; [now apply is_value_b_sound|]. split; [now apply Dltb_iff|]. split; [exact N16|]. split; [exact S16|].
destruct (is_pow2_b_sound F _ H17) as [k Hk]. exists k. now rewrite <- F2R_abs.
Qed.

Theorem check1_sound : forall w, check1 w = true -> Condition1_at F A w.
Proof.
intros w. apply check1_with_sound. intros H. exact (dead_below_sound _ _ H).
Qed.

(** ** Refutation from facts at every value of F *)

Definition cond1_at (zd : dyadic) : bool :=
  match sfin negOm with
  | None => false
  | Some L =>
    Dleb (neg_half_Omega F) zd && dead_below zd L &&
    existsb (fun z => Dltb zd z && is_Some (sfin z) && negb (opt_eqb (sfin z) L)) (enum F) &&
    existsb (fun z => match sfin z with Some v => is_pow2_b F v | None => false end) (enum F) &&
    existsb (fun z => opt_eqb (sfin z) Dzero) (enum F) &&
    existsb (fun z => Dltb zd z && match dfin z with Some v => is_pow2_b F (Fabs v) | None => false end) (enum F)
  end.

Definition refute1 : bool :=
  complete F fs fd && is_value_b F negOm && forallb (fun zd => negb (cond1_at zd)) (enum F).

Theorem refute1_sound : refute1 = true -> ~ Condition1 F A.
Proof.
intros H HC. unfold refute1 in H. rewrite !andb_true_iff in H.
destruct H as [[Hc Hom] Hall].
assert (Hom' : in_format F (F2R negOm)) by now apply is_value_b_sound.
unfold Condition1 in HC. destruct HC as [zr [Hzr [Hhalf [[NL Ha] [Hb [Hcc [Hdd He]]]]]]].
destruct (enum_complete F Hwf zr Hzr) as [zd [Hzd <-]].
rewrite forallb_forall in Hall. specialize (Hall zd Hzd).
apply negb_true_iff in Hall. revert Hall. apply not_false_iff_true.
unfold cond1_at.
rewrite <- F2R_negOm in NL.
destruct (sfin_complete F Hwf A fs fd Hfs Hc negOm Hom' NL) as [L [EL HL]].
rewrite EL. rewrite F2R_negOm in HL.
rewrite !andb_true_iff. repeat split.
- apply Dleb_iff. now rewrite F2R_neg_half_Omega.
- unfold dead_below. apply forallb_forall. intros z Hz.
  destruct (Dleb z zd) eqn:Ez; [|reflexivity]. simpl. apply Dleb_iff in Ez.
  destruct (Ha (F2R z) (enum_sound F Hwf z Hz) Ez) as [S1 S2].
  assert (N1 : no_overflow F (sigma A (F2R z))).
  { unfold no_overflow. fold (sigma_tilde F A (F2R z)). rewrite S1, <- HL.
    destruct (sfin_sound F A fs Hfs negOm L EL) as [_ [_ B]]. exact B. }
  assert (N2 : no_overflow F (dsigma A (F2R z))).
  { unfold no_overflow. fold (dsigma_tilde F A (F2R z)). rewrite S2, Rabs_R0.
    apply Rlt_le, wf_Omega_pos; exact Hwf. }
  destruct (sfin_complete F Hwf A fs fd Hfs Hc z (enum_sound F Hwf z Hz) N1) as [v [Ev Hv]].
  destruct (dfin_complete F Hwf A fs fd Hfd Hc z (enum_sound F Hwf z Hz) N2) as [w [Ew Hw]].
  unfold opt_eqb. rewrite Ev, Ew, !andb_true_iff. split; apply Deqb_iff.
  + rewrite Hv, S1. now rewrite HL.
  + rewrite Hw, S2. now rewrite F2R_Dzero.
- apply existsb_exists. destruct Hb as [z [Hz [Hlt [Nz Hne]]]].
  destruct (enum_complete F Hwf z Hz) as [d [Hd <-]]. exists d. split; [exact Hd|].
  destruct (sfin_complete F Hwf A fs fd Hfs Hc d Hz Nz) as [v [Ev Hv]].
  rewrite Ev. unfold opt_eqb. rewrite !andb_true_iff. repeat split.
  + now apply Dltb_iff.
  + apply negb_true_iff, Deqb_false_iff. rewrite Hv, HL. exact Hne.
- apply existsb_exists. destruct Hcc as [z [Hz [Nz [k Hk]]]].
  destruct (enum_complete F Hwf z Hz) as [d [Hd <-]]. exists d. split; [exact Hd|].
  destruct (sfin_complete F Hwf A fs fd Hfs Hc d Hz Nz) as [v [Ev Hv]].
  rewrite Ev. apply (is_pow2_b_complete F Hwf (sigma A (F2R d)) k Nz Hk). exact Hv.
- apply existsb_exists. destruct Hdd as [z [Hz Hz0]].
  destruct (enum_complete F Hwf z Hz) as [d [Hd <-]]. exists d. split; [exact Hd|].
  assert (Nz : no_overflow F (sigma A (F2R d))).
  { unfold no_overflow. fold (sigma_tilde F A (F2R d)). rewrite Hz0, Rabs_R0.
    apply Rlt_le, wf_Omega_pos; exact Hwf. }
  destruct (sfin_complete F Hwf A fs fd Hfs Hc d Hz Nz) as [v [Ev Hv]].
  unfold opt_eqb. rewrite Ev. apply Deqb_iff. now rewrite Hv, Hz0, F2R_Dzero.
- apply existsb_exists. destruct He as [z [Hz [Hlt [Nz [k Hk]]]]].
  destruct (enum_complete F Hwf z Hz) as [d [Hd <-]]. exists d. split; [exact Hd|].
  destruct (dfin_complete F Hwf A fs fd Hfd Hc d Hz Nz) as [v [Ev Hv]].
  rewrite Ev, andb_true_iff. split; [now apply Dltb_iff|].
  apply (is_pow2_b_complete F Hwf (Rabs (dsigma A (F2R d))) k).
  + unfold no_overflow, RN in Nz |- *. rewrite round_NE_abs by (apply valid_exp_F; exact Hwf).
    rewrite Rabs_Rabsolu. exact Nz.
  + unfold RN. rewrite round_NE_abs by (apply valid_exp_F; exact Hwf). exact Hk.
  + unfold RN. rewrite round_NE_abs by (apply valid_exp_F; exact Hwf).
    rewrite F2R_abs, Hv. reflexivity.
Qed.

End Check1.
