(** * Exact dyadic numbers and a computable rounding

    A dyadic number is a Flocq float [Float radix2 m e], of value [m * 2^e] ([F2R]).  Comparisons,
    sums and products of dyadics are exact integer computations.  [rnd_d F d] rounds a dyadic to
    the nearest value of F, ties to even, with Flocq's own truncation machinery
    (Flocq.Calc.Round); [rnd_d_correct] proves that it equals Flocq's [round] ([RN F]).  So a
    statement about RN at dyadic points is decided by [vm_compute]. *)

From Coq Require Import ZArith Reals Lia Lra List Bool.
From Flocq Require Import Core Operations Bracket Round.
From Condcheck Require Import Format.
Open Scope R_scope.

Notation dyadic := (float radix2).

(** ** Exact comparisons *)

Definition Dcmp (d1 d2 : dyadic) : comparison :=
  let '(m1, m2, _) := Falign d1 d2 in Z.compare m1 m2.

Lemma Dcmp_correct : forall d1 d2, Dcmp d1 d2 = Rcompare (F2R d1) (F2R d2).
Proof.
intros d1 d2. unfold Dcmp.
generalize (Falign_spec d1 d2).
destruct (Falign d1 d2) as [[m1 m2] e]. intros [-> ->].
now rewrite Rcompare_F2R.
Qed.

Definition Deqb (d1 d2 : dyadic) : bool :=
  match Dcmp d1 d2 with Eq => true | _ => false end.
Definition Dleb (d1 d2 : dyadic) : bool :=
  match Dcmp d1 d2 with Gt => false | _ => true end.
Definition Dltb (d1 d2 : dyadic) : bool :=
  match Dcmp d1 d2 with Lt => true | _ => false end.

Lemma Deqb_iff : forall d1 d2, Deqb d1 d2 = true <-> F2R d1 = F2R d2.
Proof.
intros d1 d2. unfold Deqb. rewrite Dcmp_correct.
destruct (Rcompare_spec (F2R d1) (F2R d2)) as [H|H|H]; split; intros; try easy; lra.
Qed.

Lemma Dleb_iff : forall d1 d2, Dleb d1 d2 = true <-> F2R d1 <= F2R d2.
Proof.
intros d1 d2. unfold Dleb. rewrite Dcmp_correct.
destruct (Rcompare_spec (F2R d1) (F2R d2)) as [H|H|H]; split; intros; try easy; lra.
Qed.

Lemma Dltb_iff : forall d1 d2, Dltb d1 d2 = true <-> F2R d1 < F2R d2.
Proof.
intros d1 d2. unfold Dltb. rewrite Dcmp_correct.
destruct (Rcompare_spec (F2R d1) (F2R d2)) as [H|H|H]; split; intros; try easy; lra.
Qed.

Lemma Deqb_false_iff : forall d1 d2, Deqb d1 d2 = false <-> F2R d1 <> F2R d2.
Proof.
intros d1 d2. split; intros H.
- intros He. apply Deqb_iff in He. congruence.
- destruct (Deqb d1 d2) eqn:E; [|reflexivity]. apply Deqb_iff in E. contradiction.
Qed.

Definition Dzero : dyadic := Float radix2 0 0.
Definition Dpow2 (k : Z) : dyadic := Float radix2 1 k.

Lemma F2R_Dzero : F2R Dzero = 0.
Proof. apply F2R_0. Qed.

Lemma F2R_Dpow2 : forall k, F2R (Dpow2 k) = bpow radix2 k.
Proof. intros k. apply F2R_bpow. Qed.

Definition Dmax (d1 d2 : dyadic) : dyadic := if Dleb d1 d2 then d2 else d1.

Lemma F2R_Dmax : forall d1 d2, F2R (Dmax d1 d2) = Rmax (F2R d1) (F2R d2).
Proof.
intros d1 d2. unfold Dmax. destruct (Dleb d1 d2) eqn:E.
- apply Dleb_iff in E. now rewrite Rmax_right.
- assert (~ F2R d1 <= F2R d2) by (intros H; apply Dleb_iff in H; congruence).
  rewrite Rmax_left; lra.
Qed.

(** ** The computable rounding *)

Section Rounding.
Variable F : format.

Definition rnd_d (d : dyadic) : dyadic :=
  let '(Float _ m e) := d in
  let '(m', e', l') := truncate radix2 (fexp F) (Z.abs m, e, loc_Exact) in
  Float radix2 (cond_Zopp (Zlt_bool m 0) (cond_incr (round_N (negb (Z.even m')) l') m')) e'.

Hypothesis Hwf : wf_format F = true.

Theorem rnd_d_correct : forall d, F2R (rnd_d d) = RN F (F2R d).
Proof.
intros [m e].
assert (Hv := valid_exp_F F Hwf).
unfold RN.
rewrite (round_trunc_sign_NE_correct radix2 (fexp F) (F2R (Float radix2 m e)) (Z.abs m) e loc_Exact).
- unfold rnd_d.
  destruct (truncate radix2 (fexp F) (Z.abs m, e, loc_Exact)) as [[m' e'] l'].
  replace (Rlt_bool (F2R (Float radix2 m e)) 0) with (Zlt_bool m 0); [reflexivity|].
  destruct (Zlt_bool_spec m 0) as [H|H].
  + symmetry. apply Rlt_bool_true. now apply F2R_lt_0.
  + symmetry. apply Rlt_bool_false. now apply F2R_ge_0.
- constructor. rewrite <- F2R_Zabs. reflexivity.
- now right.
Qed.

(** The rounded value is finite: |d| <= Omega. *)
Definition fin_b (d : dyadic) : bool := Dleb (Fabs d) (f_Omega F).

Lemma fin_b_iff : forall d, fin_b d = true <-> Rabs (F2R d) <= Omega F.
Proof. intros d. unfold fin_b. rewrite Dleb_iff, F2R_abs. reflexivity. Qed.

(** [d] is a value of F (checked on a representation with a small significand: condcheck writes
    every value with an odd significand, or 0). *)
Definition is_value_b (d : dyadic) : bool :=
  fin_b d &&
  (Z.eqb (Fnum d) 0 || (Z.ltb (Z.abs (Fnum d)) (Zpow2 (prec F)) && Z.leb (f_emin F - f_M F) (Fexp d))).

Lemma is_value_b_sound : forall d, is_value_b d = true -> in_format F (F2R d).
Proof.
intros [m e] H. unfold is_value_b in H. apply andb_prop in H as [Hf H].
split; [|now apply fin_b_iff].
simpl in H. destruct (Z.eqb_spec m 0) as [->|Hm].
- rewrite F2R_0. apply generic_format_0.
- simpl in H. apply andb_prop in H as [H1 H2].
  apply generic_format_FLT. apply FLT_spec with (Float radix2 m e); [reflexivity| |].
  + simpl. rewrite Zpower_2 by (unfold prec; generalize (wf_M F Hwf); lia). lia.
  + simpl. lia.
Qed.

(** RN is monotone: a real between two dyadics that round to the same value rounds to it too. *)
Lemma RN_between : forall (lo hi : dyadic) y,
  F2R lo <= y <= F2R hi -> RN F (F2R lo) <= RN F y <= RN F (F2R hi).
Proof.
intros lo hi y [H1 H2]. assert (Hv := valid_exp_F F Hwf).
split; apply round_le; auto with typeclass_instances.
Qed.

Lemma RN_bracket : forall (lo hi v : dyadic) y,
  Deqb (rnd_d lo) v = true -> Deqb (rnd_d hi) v = true ->
  F2R lo <= y <= F2R hi -> RN F y = F2R v.
Proof.
intros lo hi v y Hlo Hhi Hy.
apply Deqb_iff in Hlo, Hhi. rewrite rnd_d_correct in Hlo, Hhi.
apply RN_between in Hy. lra.
Qed.

End Rounding.
