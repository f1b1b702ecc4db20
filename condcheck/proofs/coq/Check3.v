(** * Deciding Condition 3 from proved facts

    [check3a] / [check3b] verify a witness of route (a) (zeta) or route (b) (zeta, x) by
    computation, and [check3a_sound] / [check3b_sound] prove that Condition 3 then holds.
    [refute3] decides from facts at every value of F that neither route has a witness;
    [refute3_sound] proves that Condition 3 then fails.  The last significand bit of a value is
    read off a dyadic by [even_b], proved equal to Flocq's canonical significand ([even_b_iff]). *)

From Coq Require Import ZArith Reals Lia Lra List Bool.
From Flocq Require Import Core Operations.
From Condcheck Require Import Format Dyadic Activations Rounded Decide Condition3.
Import ListNotations.
Open Scope R_scope.

Section Even.
Variable F : format.
Hypothesis Hwf : wf_format F = true.

(** The canonical integer significand of a dyadic value of F, computed. *)
Definition canonical_significand (d : dyadic) : Z :=
  let m := Fnum d in let e := Fexp d in
  if (m =? 0)%Z then 0%Z else
  let c := fexp F (Zdigits radix2 m + e) in
  if (c <=? e)%Z then (m * Zpow2 (e - c))%Z else (m / Zpow2 (c - e))%Z.

Lemma canonical_significand_correct : forall d, generic_format radix2 (fexp F) (F2R d) ->
  Ztrunc (scaled_mantissa radix2 (fexp F) (F2R d)) = canonical_significand d.
Proof.
intros [m e] Hg. unfold canonical_significand. simpl.
assert (Hv := valid_exp_F F Hwf).
destruct (Z.eqb_spec m 0) as [->|Hm].
- rewrite F2R_0, scaled_mantissa_0. apply Ztrunc_IZR.
- set (c := fexp F (Zdigits radix2 m + e)).
  assert (Hc : cexp radix2 (fexp F) (F2R (Float radix2 m e)) = c).
  { unfold cexp. now rewrite mag_F2R_Zdigits. }
  assert (Hs : scaled_mantissa radix2 (fexp F) (F2R (Float radix2 m e)) = IZR m * bpow radix2 (e - c)).
  { unfold scaled_mantissa. rewrite Hc. unfold F2R. simpl. rewrite Rmult_assoc, <- bpow_plus. f_equal. }
  destruct (Z.leb_spec c e) as [H|H].
  + rewrite Hs, <- IZR_Zpower by lia. rewrite <- mult_IZR, Ztrunc_IZR.
    now rewrite Zpower_2 by lia.
  + assert (Hn := scaled_mantissa_generic radix2 (fexp F) _ Hg).
    set (n := Ztrunc (scaled_mantissa radix2 (fexp F) (F2R (Float radix2 m e)))) in Hn |- *.
    rewrite Hs in Hn.
    assert (Hmn : m = (n * Zpow2 (c - e))%Z).
    { apply eq_IZR. rewrite mult_IZR, <- Zpower_2 by lia. rewrite IZR_Zpower by lia.
      rewrite <- Hn. rewrite Rmult_assoc, <- bpow_plus. replace (e - c + (c - e))%Z with 0%Z by ring.
      simpl. ring. }
    rewrite Hmn. rewrite Z.div_mul; [reflexivity|].
    assert (0 < Zpow2 (c - e))%Z by (apply Z.pow_pos_nonneg; lia). lia.
Qed.

Definition even_b (d : dyadic) : bool := Z.even (canonical_significand d).

Lemma even_b_iff : forall d, generic_format radix2 (fexp F) (F2R d) ->
  (even_b d = true <-> even_significand F (F2R d)).
Proof.
intros d Hg. unfold even_b, even_significand. now rewrite canonical_significand_correct.
Qed.

End Even.

Section Check3.
Variable F : format.
Hypothesis Hwf : wf_format F = true.
Variable A : activation.
Variables fs fd : list fact.
Hypothesis Hfs : Forall (fact_holds F (sigma A)) fs.
Hypothesis Hfd : Forall (fact_holds F (dsigma A)) fd.

Notation sfin := (sfin fs).
Notation dfin := (dfin fd).
Let T := Dpow2 (f_emax F).
Let thr := Dpow2 (- f_M F).

Definition bounded_b (t : dyadic) : bool :=
  match sfin t with Some v => Dleb (Fabs v) T | None => false end.

Lemma bounded_b_sound : forall t, bounded_b t = true -> bounded_at F A (F2R t).
Proof.
intros t H. unfold bounded_b in H. destruct (sfin t) as [v|] eqn:E; [|discriminate].
destruct (sfin_sound F A fs Hfs t v E) as [S [N _]]. split; [exact N|].
rewrite S, <- F2R_abs. apply Dleb_iff in H. unfold T in H. now rewrite F2R_Dpow2 in H.
Qed.

(** |sigma~'| >= 2^-M at z *)
Definition usable_b (z : dyadic) : bool :=
  match dfin z with Some v => Dleb thr (Fabs v) | None => false end.

Lemma usable_b_sound : forall z, usable_b z = true ->
  no_overflow F (dsigma A (F2R z)) /\ bpow radix2 (- f_M F) <= Rabs (dsigma_tilde F A (F2R z)).
Proof.
intros z H. unfold usable_b in H. destruct (dfin z) as [v|] eqn:E; [|discriminate].
destruct (dfin_sound F A fd Hfd z v E) as [S [N _]]. split; [exact N|].
rewrite S, <- F2R_abs. apply Dleb_iff in H. unfold thr in H. now rewrite F2R_Dpow2 in H.
Qed.

Definition route_a (zeta : dyadic) : bool :=
  usable_b Dzero && Dltb Dzero zeta && bounded_b (Fopp zeta) && bounded_b Dzero && bounded_b zeta.

Definition s_of (zeta x : dyadic) : dyadic := rnd_d F (Fplus zeta (Fabs x)).

Definition route_b (zeta x : dyadic) : bool :=
  Dltb Dzero zeta && Dleb zeta (Fabs x) && even_b F x && fin_b F (s_of zeta x) &&
  is_Some (sfin x) && usable_b x &&
  bounded_b (Fopp (s_of zeta x)) && bounded_b Dzero && bounded_b (s_of zeta x).

Definition bounded_with_b (t v : dyadic) : bool := opt_eqb (sfin t) v && Dleb (Fabs v) T.

Lemma bounded_with_b_sound : forall t v, bounded_with_b t v = true -> bounded_with F A (F2R t) (F2R v).
Proof.
intros t v H. unfold bounded_with_b, opt_eqb in H. rewrite andb_true_iff in H. destruct H as [H1 H2].
destruct (sfin t) as [u|] eqn:E; [|discriminate]. apply Deqb_iff in H1.
destruct (sfin_sound F A fs Hfs t u E) as [S [N _]].
split; [exact N|]. split; [now rewrite S, H1|].
apply Dleb_iff in H2. unfold T in H2. now rewrite F2R_abs, F2R_Dpow2 in H2.
Qed.

Lemma F2R_s_of : forall zeta x, F2R (s_of zeta x) = RN F (F2R zeta + Rabs (F2R x)).
Proof. intros zeta x. unfold s_of. rewrite rnd_d_correct by exact Hwf. now rewrite F2R_plus, F2R_abs. Qed.

Definition usable_with_b (z v : dyadic) : bool := opt_eqb (dfin z) v && Dleb thr (Fabs v).

Lemma usable_with_b_sound : forall z v, usable_with_b z v = true ->
  no_overflow F (dsigma A (F2R z)) /\ dsigma_tilde F A (F2R z) = F2R v /\
  bpow radix2 (- f_M F) <= Rabs (F2R v).
Proof.
intros z v H. unfold usable_with_b, opt_eqb in H. rewrite andb_true_iff in H. destruct H as [H1 H2].
destruct (dfin z) as [u|] eqn:E; [|discriminate]. apply Deqb_iff in H1.
destruct (dfin_sound F A fd Hfd z u E) as [S [N _]].
split; [exact N|]. split; [now rewrite S, H1|].
apply Dleb_iff in H2. unfold thr in H2. now rewrite F2R_abs, F2R_Dpow2 in H2.
Qed.

(** Route (a) at the certificate's witness, with the values it states. *)
Definition check3a (w : witness3) : bool :=
  let zeta := w3_zeta w in
  Deqb (w3_s w) zeta && usable_with_b Dzero (w3_dsigma_at w) &&
  is_value_b F zeta && Dltb Dzero zeta &&
  bounded_with_b (Fopp zeta) (w3_sigma_minus_s w) && bounded_with_b Dzero (w3_sigma_0 w) &&
  bounded_with_b zeta (w3_sigma_s w).

(** Route (b) at the certificate's witness, with the values it states. *)
Definition check3b (w : witness3) : bool :=
  let zeta := w3_zeta w in let x := w3_x w in let s := w3_s w in
  is_value_b F zeta && is_value_b F x && Dltb Dzero zeta && Dleb zeta (Fabs x) && even_b F x &&
  Deqb (s_of zeta x) s && fin_b F s && is_Some (sfin x) && usable_with_b x (w3_dsigma_at w) &&
  bounded_with_b (Fopp s) (w3_sigma_minus_s w) && bounded_with_b Dzero (w3_sigma_0 w) &&
  bounded_with_b s (w3_sigma_s w).

Theorem check3a_sound : forall w, check3a w = true -> Condition3a_at F A w.
Proof.
intros w H. unfold check3a in H. rewrite !andb_true_iff in H.
destruct H as [[[[[[Hs Hu] Hz] Hpos] B1] B2] B3].
unfold Condition3a_at. cbv zeta.
split; [now apply Deqb_iff|].
destruct (usable_with_b_sound _ _ Hu) as [N [D U]]. rewrite F2R_Dzero in N, D.
split; [exact N|]. split; [exact D|]. split; [exact U|].
split; [now apply is_value_b_sound|].
split; [apply Dltb_iff in Hpos; now rewrite F2R_Dzero in Hpos|].
apply bounded_with_b_sound in B1, B2, B3. rewrite F2R_opp in B1. rewrite F2R_Dzero in B2. auto.
Qed.

Theorem check3b_sound : forall w, check3b w = true -> Condition3b_at F A w.
Proof.
intros w H. unfold check3b in H. rewrite !andb_true_iff in H.
destruct H as [[[[[[[[[[[Hz Hx] Hpos] Hle] He] Hs] Hfin] Hsx] Hu] B1] B2] B3].
unfold Condition3b_at. cbv zeta.
assert (Vx := is_value_b_sound F Hwf _ Hx).
apply Deqb_iff in Hs. rewrite F2R_s_of in Hs.
split; [now apply is_value_b_sound|]. split; [exact Vx|].
split; [apply Dltb_iff in Hpos; now rewrite F2R_Dzero in Hpos|].
split; [apply Dleb_iff in Hle; now rewrite F2R_abs in Hle|].
split; [apply (even_b_iff F Hwf _ (proj1 Vx)); exact He|].
split; [apply fin_b_iff in Hfin; unfold no_overflow; now rewrite Hs|].
split; [exact Hs|].
split.
{ unfold is_Some in Hsx. destruct (sfin (w3_x w)) as [v|] eqn:E; [|discriminate].
  now destruct (sfin_sound F A fs Hfs _ v E) as [_ [N _]]. }
destruct (usable_with_b_sound _ _ Hu) as [N [D U]]. split; [exact N|]. split; [exact D|]. split; [exact U|].
apply bounded_with_b_sound in B1, B2, B3. rewrite F2R_opp in B1. rewrite F2R_Dzero in B2. auto.
Qed.

(** ** Refutation from facts at every value of F *)

Definition refute3 : bool :=
  complete F fs fd &&
  forallb (fun zeta => negb (route_a zeta)) (enum F) &&
  forallb (fun zeta => forallb (fun x => negb (route_b zeta x)) (enum F)) (enum F).

Lemma in_format_0 : in_format F 0.
Proof.
split; [apply generic_format_0|]. rewrite Rabs_R0. apply Rlt_le, wf_Omega_pos. exact Hwf.
Qed.

Lemma in_format_opp : forall y, in_format F y -> in_format F (- y).
Proof. intros y [H1 H2]. split; [now apply generic_format_opp|]. now rewrite Rabs_Ropp. Qed.

Lemma in_format_RN : forall y, no_overflow F y -> in_format F (RN F y).
Proof.
intros y H. split; [|exact H]. pose proof (valid_exp_F F Hwf).
apply generic_format_round; auto with typeclass_instances.
Qed.

Section Complete.
Hypothesis Hc : complete F fs fd = true.

Lemma bounded_b_complete : forall t, in_format F (F2R t) -> bounded_at F A (F2R t) -> bounded_b t = true.
Proof.
intros t Ht [N B]. unfold bounded_b.
destruct (sfin_complete F Hwf A fs fd Hfs Hc t Ht N) as [v [E Hv]].
rewrite E. apply Dleb_iff. unfold T. rewrite F2R_Dpow2, F2R_abs, Hv. exact B.
Qed.

Lemma usable_b_complete : forall z, in_format F (F2R z) -> no_overflow F (dsigma A (F2R z)) ->
  bpow radix2 (- f_M F) <= Rabs (dsigma_tilde F A (F2R z)) -> usable_b z = true.
Proof.
intros z Hz N U. unfold usable_b.
destruct (dfin_complete F Hwf A fs fd Hfd Hc z Hz N) as [v [E Hv]].
rewrite E. apply Dleb_iff. unfold thr. rewrite F2R_Dpow2, F2R_abs, Hv. exact U.
Qed.

Theorem refute3_sound : refute3 = true -> ~ Condition3 F A.
Proof.
intros H HC. unfold refute3 in H. rewrite !andb_true_iff in H. destruct H as [[_ Ha] Hb].
assert (Z0 : in_format F (F2R Dzero)) by (rewrite F2R_Dzero; apply in_format_0).
destruct HC as [[N [U [z [Hz [Hpos [B1 [B2 B3]]]]]]]|[z [x HC]]].
- destruct (enum_complete F Hwf z Hz) as [d [Hd <-]].
  rewrite forallb_forall in Ha. specialize (Ha d Hd). apply negb_true_iff in Ha.
  revert Ha. apply not_false_iff_true. unfold route_a. rewrite !andb_true_iff. repeat split.
  + apply usable_b_complete; rewrite ?F2R_Dzero; auto. apply in_format_0.
  + apply Dltb_iff. now rewrite F2R_Dzero.
  + apply bounded_b_complete; rewrite F2R_opp; [now apply in_format_opp|exact B1].
  + apply bounded_b_complete; rewrite ?F2R_Dzero; auto. apply in_format_0.
  + apply bounded_b_complete; auto.
- cbv zeta in HC.
  destruct HC as [Hz [Hx [Hpos [Hle [He [Hs [Nx [Mx [U [B1 [B2 B3]]]]]]]]]]].
  destruct (enum_complete F Hwf z Hz) as [dz [Hdz <-]].
  destruct (enum_complete F Hwf x Hx) as [dx [Hdx <-]].
  rewrite forallb_forall in Hb. specialize (Hb dz Hdz). rewrite forallb_forall in Hb.
  specialize (Hb dx Hdx). apply negb_true_iff in Hb.
  revert Hb. apply not_false_iff_true. unfold route_b.
  assert (Hs' : in_format F (F2R (s_of dz dx))) by (rewrite F2R_s_of; now apply in_format_RN).
  rewrite !andb_true_iff. repeat split.
  + apply Dltb_iff. now rewrite F2R_Dzero.
  + apply Dleb_iff. now rewrite F2R_abs.
  + apply (even_b_iff F Hwf dx (proj1 Hx)). exact He.
  + apply fin_b_iff. rewrite F2R_s_of. exact Hs.
  + destruct (sfin_complete F Hwf A fs fd Hfs Hc dx Hx Nx) as [v [E _]]. now rewrite E.
  + now apply usable_b_complete.
  + apply bounded_b_complete; rewrite F2R_opp, F2R_s_of; [|exact B1].
    apply in_format_opp. rewrite <- F2R_s_of. exact Hs'.
  + apply bounded_b_complete; rewrite ?F2R_Dzero; auto. apply in_format_0.
  + apply bounded_b_complete; rewrite F2R_s_of; [|exact B3]. rewrite <- F2R_s_of. exact Hs'.
Qed.

End Complete.

End Check3.
