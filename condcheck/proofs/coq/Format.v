(** * Formats of condcheck in Flocq's terms

    A format F of condcheck (condcheck/formats.py) is a finite set of binary values
    [s * m * 2^(e - M)] with an integer significand [0 <= m < 2^(M+1)], an exponent [e >= e_min],
    and [|value| <= Omega].  In Flocq's terms that is the generic format of
    [FLT_exp (e_min - M) (M + 1)] (unbounded above) cut at the largest finite value Omega.

    Rounding: RN is Flocq's [round radix2 fexp ZnearestE] on that unbounded grid.  As in
    condcheck/rounding.py, a result whose rounding exceeds Omega in magnitude is an overflow
    (IEEE: Inf; fn formats: NaN): condcheck's finite-only semantics makes every overflow an error,
    so the statements below ask for [no_overflow] wherever condcheck requires a finite value.

    The values of a format are enumerated ([enum]); [enum_complete] and [enum_sound] prove that
    this list holds exactly the values of the format, so that a statement over every value of a
    small format can be decided by computation. *)

From Coq Require Import ZArith Reals Lia Lra List Bool.
From Flocq Require Import Core Operations.
Import ListNotations.
Open Scope R_scope.

Record format := Format {
  f_M : Z;                 (** stored fraction bits *)
  f_emin : Z;              (** exponent of the smallest normal value *)
  f_emax : Z;              (** exponent of the largest finite value *)
  f_Omega : float radix2   (** the largest finite value, exactly *)
}.

Section Definitions.
Variable F : format.

Definition prec : Z := (f_M F + 1)%Z.
Definition fexp : Z -> Z := FLT_exp (f_emin F - f_M F) prec.

(** Round to nearest, ties to even, on the grid of F without an upper bound. *)
Definition RN (x : R) : R := round radix2 fexp ZnearestE x.

Definition Omega : R := F2R (f_Omega F).

(** The finite values of F. *)
Definition in_format (x : R) : Prop := generic_format radix2 fexp x /\ Rabs x <= Omega.

(** [RN y] is finite: no overflow. *)
Definition no_overflow (y : R) : Prop := Rabs (RN y) <= Omega.

(** The last bit of the significand of [x] is 0 (the "even" values of ties-to-even). *)
Definition even_significand (x : R) : Prop :=
  Z.even (Ztrunc (scaled_mantissa radix2 fexp x)) = true.

End Definitions.

(** ** Well-formed formats: checked by computation on the data of a format *)

Definition Zpow2 (n : Z) : Z := Z.pow 2 n.

Definition F2Rabs_le_b (d : float radix2) (om : float radix2) : bool :=
  (* |d| <= om, compared exactly *)
  let '(Float _ m1 e1) := d in
  let '(Float _ m2 e2) := om in
  if Z.leb e1 e2 then Z.leb (Z.abs m1) (m2 * Z.pow 2 (e2 - e1))
  else Z.leb (Z.abs m1 * Z.pow 2 (e1 - e2)) m2.

Definition wf_format (F : format) : bool :=
  (0 <=? f_M F)%Z && (f_emin F <=? f_emax F)%Z &&
  (0 <? Fnum (f_Omega F))%Z &&
  (* Omega < 2^(emax + 1) *)
  negb (F2Rabs_le_b (Float radix2 1 (f_emax F + 1)) (f_Omega F)).

(** ** Enumeration of the values *)

Fixpoint zseq (a : Z) (n : nat) : list Z :=
  match n with O => [] | S n' => a :: zseq (a + 1) n' end.

Definition zrange (a b : Z) : list Z := zseq a (Z.to_nat (b - a + 1)).

Lemma In_zseq : forall n a z, (a <= z < a + Z.of_nat n)%Z -> In z (zseq a n).
Proof.
induction n as [|n IH]; intros a z Hz; simpl in *.
- lia.
- destruct (Z.eq_dec a z) as [->|Hne]; [now left|right].
  apply IH. lia.
Qed.

Lemma In_zseq_bounds : forall n a z, In z (zseq a n) -> (a <= z < a + Z.of_nat n)%Z.
Proof.
induction n as [|n IH]; intros a z Hz; simpl in *; [easy|].
destruct Hz as [<-|Hz]; [lia|]. apply IH in Hz. lia.
Qed.

Lemma In_zrange_bounds : forall a b z, In z (zrange a b) -> (a <= z <= b)%Z.
Proof.
intros a b z Hz. apply In_zseq_bounds in Hz.
destruct (Z.le_gt_cases 0 (b - a + 1)) as [H|H].
- rewrite Z2Nat.id in Hz by exact H. lia.
- replace (Z.to_nat (b - a + 1)) with 0%nat in Hz by (destruct (b - a + 1)%Z; simpl; lia). simpl in Hz. lia.
Qed.

Lemma In_zrange : forall a b z, (a <= z <= b)%Z -> In z (zrange a b).
Proof.
intros a b z Hz. apply In_zseq. rewrite Z2Nat.id; lia.
Qed.

(** Every pair (m, e) with |m| < 2^(M+1) and e_min - M <= e <= e_max - M, cut at Omega.
    A value may appear more than once (with different exponents); that does not matter for
    statements over every value. *)
Definition enum_raw (F : format) : list (float radix2) :=
  let pm := (Zpow2 (prec F) - 1)%Z in
  flat_map (fun e => map (fun m => Float radix2 m e) (zrange (- pm) pm))
           (zrange (f_emin F - f_M F) (f_emax F - f_M F)).

Definition enum (F : format) : list (float radix2) :=
  filter (fun d => F2Rabs_le_b d (f_Omega F)) (enum_raw F).

Lemma F2Rabs_le_b_correct : forall d om,
  F2Rabs_le_b d om = true <-> Rabs (F2R d) <= F2R om.
Proof.
intros [m1 e1] [m2 e2]. unfold F2Rabs_le_b.
rewrite <- F2R_abs. unfold Fabs. simpl.
destruct (Z.leb_spec e1 e2) as [H|H].
- rewrite (F2R_change_exp radix2 e1 m2 e2) by lia.
  rewrite Z.leb_le. split.
  + intros Hm. apply F2R_le. exact Hm.
  + intros Hm. apply le_F2R in Hm. exact Hm.
- rewrite (F2R_change_exp radix2 e2 (Z.abs m1) e1) by lia.
  rewrite Z.leb_le. split.
  + intros Hm. apply F2R_le. exact Hm.
  + intros Hm. apply le_F2R in Hm. exact Hm.
Qed.

Section Enum.
Variable F : format.
Hypothesis Hwf : wf_format F = true.

Lemma wf_M : (0 <= f_M F)%Z.
Proof. unfold wf_format in Hwf. repeat (apply andb_prop in Hwf; destruct Hwf as [Hwf ?]). lia. Qed.

Lemma wf_emin_emax : (f_emin F <= f_emax F)%Z.
Proof.
unfold wf_format in Hwf. apply andb_prop in Hwf as [H1 _].
apply andb_prop in H1 as [H1 _]. apply andb_prop in H1 as [_ H1]. lia.
Qed.

Lemma wf_Omega_lt : Omega F < bpow radix2 (f_emax F + 1).
Proof.
unfold wf_format in Hwf. apply andb_prop in Hwf as [H1 H2].
apply negb_true_iff in H2.
destruct (Rlt_le_dec (Omega F) (bpow radix2 (f_emax F + 1))) as [H|H]; [exact H|].
exfalso. assert (H3 : F2Rabs_le_b (Float radix2 1 (f_emax F + 1)) (f_Omega F) = true).
{ apply F2Rabs_le_b_correct. rewrite F2R_bpow. rewrite Rabs_pos_eq by apply bpow_ge_0. exact H. }
congruence.
Qed.

Lemma wf_Omega_pos : 0 < Omega F.
Proof.
unfold wf_format in Hwf. apply andb_prop in Hwf as [H1 _].
apply andb_prop in H1 as [_ H1]. apply F2R_gt_0. lia.
Qed.

Global Instance prec_gt_0_F : Prec_gt_0 (prec F).
Proof. unfold Prec_gt_0, prec. generalize wf_M. lia. Qed.

Global Instance valid_exp_F : Valid_exp (fexp F).
Proof. unfold fexp. apply FLT_exp_valid. exact prec_gt_0_F. Qed.

Lemma Zpower_2 : forall n, (0 <= n)%Z -> Zpower radix2 n = Zpow2 n.
Proof.
intros [|n|n] Hn; try reflexivity; lia.
Qed.


(** Every element of [enum F] is a value of F. *)
Lemma enum_sound : forall d, In d (enum F) -> in_format F (F2R d).
Proof.
intros d Hd. unfold enum in Hd. apply filter_In in Hd as [Hd Ho].
split; [|now apply F2Rabs_le_b_correct].
unfold enum_raw in Hd. apply in_flat_map in Hd as [e [He Hd]].
apply in_map_iff in Hd as [m [<- Hm]].
apply generic_format_FLT.
apply FLT_spec with (Float radix2 m e); [reflexivity| |].
- simpl. apply In_zrange_bounds in Hm.
  rewrite Zpower_2 by (unfold prec; generalize wf_M; lia). lia.
- simpl. apply In_zrange_bounds in He. lia.
Qed.

(** Every value of F is (the value of) an element of [enum F]. *)
Lemma enum_complete : forall x, in_format F x -> exists d, In d (enum F) /\ F2R d = x.
Proof.
intros x [Hg Ho].
assert (Hp := wf_M). assert (Hee := wf_emin_emax).
assert (Hpp : (0 < Zpow2 (prec F))%Z) by (apply Z.pow_pos_nonneg; [lia|unfold prec; lia]).
destruct (Req_dec x 0) as [Hx0|Hx0].
- exists (Float radix2 0 (f_emin F - f_M F)). split.
  + unfold enum. apply filter_In. split.
    * unfold enum_raw. apply in_flat_map. exists (f_emin F - f_M F)%Z. split.
      -- apply In_zrange. lia.
      -- apply in_map_iff. exists 0%Z. split; [reflexivity|]. apply In_zrange. lia.
    * apply F2Rabs_le_b_correct. rewrite F2R_0, Rabs_R0. generalize wf_Omega_pos. fold (Omega F). lra.
  + rewrite F2R_0. now rewrite Hx0.
- set (e := cexp radix2 (fexp F) x).
  set (m := Ztrunc (scaled_mantissa radix2 (fexp F) x)).
  assert (Hx : x = F2R (Float radix2 m e)) by exact Hg.
  assert (He : e = Z.max (mag radix2 x - prec F) (f_emin F - f_M F)) by reflexivity.
  assert (Hmag : (mag radix2 x <= f_emax F + 1)%Z).
  { apply mag_le_bpow; [exact Hx0|]. generalize wf_Omega_lt. fold (Omega F). lra. }
  assert (Hm : (Z.abs m < Zpow2 (prec F))%Z).
  { rewrite <- Zpower_2 by (unfold prec; lia).
    apply lt_IZR. rewrite abs_IZR. rewrite IZR_Zpower by (unfold prec; lia).
    unfold m. rewrite <- scaled_mantissa_generic by exact Hg.
    unfold scaled_mantissa. fold e. rewrite Rabs_mult, (Rabs_pos_eq (bpow _ _)) by apply bpow_ge_0.
    apply Rlt_le_trans with (bpow radix2 (mag radix2 x) * bpow radix2 (- e)).
    - apply Rmult_lt_compat_r; [apply bpow_gt_0|]. apply bpow_mag_gt.
    - rewrite <- bpow_plus. apply bpow_le. lia. }
  exists (Float radix2 m e). split; [|now rewrite Hx].
  unfold enum. apply filter_In. split.
  + unfold enum_raw. apply in_flat_map. exists e. split.
    * apply In_zrange. unfold prec in He. lia.
    * apply in_map_iff. exists m. split; [reflexivity|]. apply In_zrange. lia.
  + apply F2Rabs_le_b_correct. rewrite <- Hx. exact Ho.
Qed.

End Enum.
