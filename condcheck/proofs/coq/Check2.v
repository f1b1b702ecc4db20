(** * Deciding Condition 2 from proved facts

    [check2] verifies a witness (delta_0, delta_1, eta_0, eta_1, eta_2, k) by computation, and
    [check2_sound] proves that Condition 2 then holds.  [refute2] decides from facts at every
    value of F that no pair (delta_0, delta_1) admits integers eta_0, eta_1, eta_2, k (for a pair,
    they exist exactly when eta_0 = 1, eta_1 = -k, eta_2 = k work, k being fixed by
    sigma~'(delta_1) = +-2^k); [refute2_sound] proves that Condition 2 then fails. *)

From Coq Require Import ZArith Reals Lia Lra List Bool.
From Flocq Require Import Core Operations.
From Condcheck Require Import Format Dyadic Activations Rounded Decide Condition2.
Import ListNotations.
Open Scope R_scope.

Section Check2.
Variable F : format.
Hypothesis Hwf : wf_format F = true.
Variable A : activation.
Variables fs fd : list fact.
Hypothesis Hfs : Forall (fact_holds F (sigma A)) fs.
Hypothesis Hfd : Forall (fact_holds F (dsigma A)) fd.

Notation sfin := (sfin fs).
Notation dfin := (dfin fd).
Let T := Dpow2 (f_emax F).

(** sigma~ and sigma~' at both points, when all four are finite and known *)
Definition pair_vals (d0 d1 : dyadic) : option (dyadic * dyadic * dyadic * dyadic) :=
  match sfin d0, sfin d1, dfin d0, dfin d1 with
  | Some s0, Some s1, Some ds0, Some ds1 => Some (s0, s1, ds0, ds1)
  | _, _, _, _ => None
  end.

Lemma pair_vals_sound : forall d0 d1 s0 s1 ds0 ds1,
  pair_vals d0 d1 = Some (s0, s1, ds0, ds1) ->
  sfin d0 = Some s0 /\ sfin d1 = Some s1 /\ dfin d0 = Some ds0 /\ dfin d1 = Some ds1.
Proof.
intros d0 d1 s0 s1 ds0 ds1 H. unfold pair_vals in H.
destruct (sfin d0), (sfin d1), (dfin d0), (dfin d1); try discriminate.
injection H as -> -> -> ->. auto.
Qed.

Definition clause_i (s0 s1 : dyadic) : bool :=
  negb (Deqb s0 s1) && Dleb (Fabs s0) T && Dleb (Fabs s1) T &&
  Dleb (Fabs (Fplus s0 (Fopp s1))) T.

Lemma clause_i_iff : forall s0 s1, clause_i s0 s1 = true <->
  F2R s0 <> F2R s1 /\ Rabs (F2R s0) <= bpow radix2 (f_emax F) /\
  Rabs (F2R s1) <= bpow radix2 (f_emax F) /\ Rabs (F2R s0 - F2R s1) <= bpow radix2 (f_emax F).
Proof.
intros s0 s1. unfold clause_i, T. rewrite !andb_true_iff, negb_true_iff, Deqb_false_iff, !Dleb_iff.
rewrite !F2R_abs, F2R_plus, F2R_opp, F2R_Dpow2. tauto.
Qed.

Definition Dmaxabs (s0 s1 : dyadic) : dyadic := Dmax (Fabs s0) (Fabs s1).

Lemma F2R_Dmaxabs : forall s0 s1, F2R (Dmaxabs s0 s1) = Rmax (Rabs (F2R s0)) (Rabs (F2R s1)).
Proof. intros s0 s1. unfold Dmaxabs. now rewrite F2R_Dmax, !F2R_abs. Qed.

(** Every clause at the certificate's witness, with the rounded values it states. *)
Definition check2 (w : witness2) : bool :=
  let s0 := w2_sigma_0 w in let s1 := w2_sigma_1 w in
  let ds0 := w2_dsigma_0 w in let ds1 := w2_dsigma_1 w in let k := w2_k w in
  is_value_b F (w2_delta_0 w) && is_value_b F (w2_delta_1 w) &&
  opt_eqb (sfin (w2_delta_0 w)) s0 && opt_eqb (sfin (w2_delta_1 w)) s1 &&
  opt_eqb (dfin (w2_delta_0 w)) ds0 && opt_eqb (dfin (w2_delta_1 w)) ds1 &&
  clause_i s0 s1 &&
  (1 <=? w2_eta_0 w)%Z && Dleb (Fmult (Dpow2 (w2_eta_0 w)) (Fabs ds0)) (Fabs ds1) &&
  Deqb (Fabs ds1) (Dpow2 k) && (- f_M F <=? k)%Z && (k <=? 0)%Z &&
  (- k <=? w2_eta_1 w)%Z && (w2_eta_1 w <=? f_emax F)%Z &&
  (k <=? w2_eta_2 w)%Z && (w2_eta_2 w <=? - f_emin F + f_M F)%Z &&
  Dleb (Dpow2 (f_emin F + w2_eta_2 w)) (Dmaxabs s0 s1) && Dleb (Dmaxabs s0 s1) (Dpow2 (f_emax F - w2_eta_1 w)).

Lemma opt_eqb_sfin2 : forall z v, opt_eqb (sfin z) v = true ->
  sigma_tilde F A (F2R z) = F2R v /\ no_overflow F (sigma A (F2R z)).
Proof.
intros z v H. unfold opt_eqb in H. destruct (sfin z) as [u|] eqn:E; [|discriminate].
apply Deqb_iff in H. destruct (sfin_sound F A fs Hfs z u E) as [S [N _]]. rewrite <- H. auto.
Qed.

Lemma opt_eqb_dfin2 : forall z v, opt_eqb (dfin z) v = true ->
  dsigma_tilde F A (F2R z) = F2R v /\ no_overflow F (dsigma A (F2R z)).
Proof.
intros z v H. unfold opt_eqb in H. destruct (dfin z) as [u|] eqn:E; [|discriminate].
apply Deqb_iff in H. destruct (dfin_sound F A fd Hfd z u E) as [S [N _]]. rewrite <- H. auto.
Qed.

Theorem check2_sound : forall w, check2 w = true -> Condition2_at F A w.
Proof.
intros w H. unfold check2 in H. rewrite !andb_true_iff in H.
destruct H as [[[[[[[[[[[[[[[[[V0 V1] E0] E1] E2] E3] Hi] He0] Hle] Hk] Hk1] Hk2] He1] He1'] He2] He2'] Hiv1] Hiv2].
destruct (opt_eqb_sfin2 _ _ E0) as [S0 N0]. destruct (opt_eqb_sfin2 _ _ E1) as [S1 N1].
destruct (opt_eqb_dfin2 _ _ E2) as [D0 M0]. destruct (opt_eqb_dfin2 _ _ E3) as [D1 M1].
apply Z.leb_le in He0, Hk1, Hk2, He1, He1', He2, He2'.
apply clause_i_iff in Hi. apply Dleb_iff in Hle, Hiv1, Hiv2. apply Deqb_iff in Hk.
rewrite F2R_mult, !F2R_abs, F2R_Dpow2 in Hle. rewrite F2R_abs, F2R_Dpow2 in Hk.
rewrite F2R_Dmaxabs, F2R_Dpow2 in Hiv1, Hiv2.
unfold Condition2_at. cbv zeta.
split; [now apply is_value_b_sound|]. split; [now apply is_value_b_sound|].
do 8 (split; [assumption|]).
split; [exact Hi|].
split; [split; [exact He0|]; split; [exact Hle|]; split; [exact Hk|]; rewrite Hk; split|].
- now apply bpow_le.
- apply (bpow_le radix2 (w2_k w) 0). lia.
- split; [split; split; lia|]. split; assumption.
Qed.

(** ** Refutation from facts at every value of F *)

Definition pair_ok (d0 d1 : dyadic) : bool :=
  match pair_vals d0 d1 with
  | None => false
  | Some (s0, s1, ds0, ds1) =>
    clause_i s0 s1 && Dleb (Fmult (Dpow2 1) (Fabs ds0)) (Fabs ds1) &&
    existsb (fun k => Deqb (Fabs ds1) (Dpow2 k) && (- k <=? f_emax F)%Z && (k <=? - f_emin F + f_M F)%Z &&
                      Dleb (Dpow2 (f_emin F + k)) (Dmaxabs s0 s1) && Dleb (Dmaxabs s0 s1) (Dpow2 (f_emax F + k)))
            (zrange (- f_M F) 0)
  end.

Definition refute2 : bool :=
  complete F fs fd && forallb (fun d0 => forallb (fun d1 => negb (pair_ok d0 d1)) (enum F)) (enum F).

Theorem refute2_sound : refute2 = true -> ~ Condition2 F A.
Proof.
intros H HC. unfold refute2 in H. rewrite andb_true_iff in H. destruct H as [Hc Hall].
destruct HC as [z0 [z1 [eta0 [eta1 [eta2 [k HC]]]]]]. cbv zeta in HC.
destruct HC as [Z0 [Z1 [N0 [N1 [M0 [M1 [Hi [[He0 [Hle [Hk Hkb]]] [[He1 He2] Hiv]]]]]]]]].
destruct (enum_complete F Hwf z0 Z0) as [d0 [Hd0 <-]].
destruct (enum_complete F Hwf z1 Z1) as [d1 [Hd1 <-]].
rewrite forallb_forall in Hall. specialize (Hall d0 Hd0). rewrite forallb_forall in Hall.
specialize (Hall d1 Hd1). apply negb_true_iff in Hall. revert Hall. apply not_false_iff_true.
destruct (sfin_complete F Hwf A fs fd Hfs Hc d0 Z0 N0) as [s0 [E0 S0]].
destruct (sfin_complete F Hwf A fs fd Hfs Hc d1 Z1 N1) as [s1 [E1 S1]].
destruct (dfin_complete F Hwf A fs fd Hfd Hc d0 Z0 M0) as [ds0 [E2 D0]].
destruct (dfin_complete F Hwf A fs fd Hfd Hc d1 Z1 M1) as [ds1 [E3 D1]].
unfold pair_ok, pair_vals. rewrite E0, E1, E2, E3.
rewrite <- S0, <- S1, <- D0, <- D1 in *.
assert (Hkr : (- f_M F <= k <= 0)%Z).
{ rewrite Hk in Hkb. destruct Hkb as [Hb1 Hb2]. split.
  - now apply le_bpow in Hb1.
  - apply (le_bpow radix2). simpl. exact Hb2. }
rewrite !andb_true_iff. split; [split|].
- now apply clause_i_iff.
- apply Dleb_iff. rewrite F2R_mult, !F2R_abs, F2R_Dpow2.
  apply Rle_trans with (2 := Hle). apply Rmult_le_compat_r; [apply Rabs_pos|]. apply bpow_le. lia.
- apply existsb_exists. exists k. split; [apply In_zrange; lia|].
  rewrite !andb_true_iff. repeat split.
  + apply Deqb_iff. now rewrite F2R_abs, F2R_Dpow2.
  + apply Z.leb_le. lia.
  + apply Z.leb_le. lia.
  + apply Dleb_iff. rewrite F2R_Dmaxabs, F2R_Dpow2.
    apply Rle_trans with (2 := proj1 Hiv). apply bpow_le. lia.
  + apply Dleb_iff. rewrite F2R_Dmaxabs, F2R_Dpow2.
    apply Rle_trans with (1 := proj2 Hiv). apply bpow_le. lia.
Qed.

End Check2.
