(** * The six activations of the paper on R, and their derivatives

    Each activation is a real function [sigma] with its derivative [dsigma], written as in
    condcheck/activations.py.  [*_derive] proves with Coquelicot that [dsigma] is the derivative of
    [sigma] wherever [sigma] is differentiable.  The one point where it is not is 0 for ReLU:
    there condcheck's convention ReLU'(0) = 0 (ReLU written [Piecewise((0, x <= 0), (x, True))],
    whose derivative takes the branch x <= 0 at 0) is a definition, not a theorem
    ([drelu_0_convention]).

    GELU is the exact one, with erf: erf is defined through Coquelicot's Riemann integral
    [RInt], and [erf_upper_tail] / [erf_lower_tail] bound erf on a whole half-line by its value at
    one cutoff, so that GELU at large arguments is bounded without integrating there. *)

From Coq Require Import Reals Lra.
From Coquelicot Require Import Coquelicot.
Open Scope R_scope.

(** An activation: sigma and the function condcheck uses as its derivative. *)
Record activation := Activation { sigma : R -> R ; dsigma : R -> R }.

(** Where [x] is in an open set on which [f = g], their derivatives at [x] agree. *)
Lemma is_derive_on_neg : forall (f g : R -> R) (x l : R),
  x < 0 -> (forall y, y < 0 -> f y = g y) -> is_derive f x l -> is_derive g x l.
Proof.
intros f g x l Hx Hfg Hd. apply is_derive_ext_loc with f; [|exact Hd].
apply (locally_open (fun y => y < 0)); [apply open_lt| |exact Hx]. exact Hfg.
Qed.

Lemma is_derive_on_pos : forall (f g : R -> R) (x l : R),
  0 < x -> (forall y, 0 < y -> f y = g y) -> is_derive f x l -> is_derive g x l.
Proof.
intros f g x l Hx Hfg Hd. apply is_derive_ext_loc with f; [|exact Hd].
apply (locally_open (fun y => 0 < y)); [apply open_gt| |exact Hx]. exact Hfg.
Qed.

(** ** ReLU *)

Definition relu (x : R) : R := if Rle_dec x 0 then 0 else x.
Definition drelu (x : R) : R := if Rle_dec x 0 then 0 else 1.
Definition RELU := Activation relu drelu.

Lemma relu_le0 : forall x, x <= 0 -> relu x = 0.
Proof. intros x H. unfold relu. destruct (Rle_dec x 0); lra. Qed.
Lemma relu_gt0 : forall x, 0 < x -> relu x = x.
Proof. intros x H. unfold relu. destruct (Rle_dec x 0); lra. Qed.
Lemma drelu_le0 : forall x, x <= 0 -> drelu x = 0.
Proof. intros x H. unfold drelu. destruct (Rle_dec x 0); lra. Qed.
Lemma drelu_gt0 : forall x, 0 < x -> drelu x = 1.
Proof. intros x H. unfold drelu. destruct (Rle_dec x 0); lra. Qed.

(** ReLU'(0) = 0: condcheck's convention, a definition (ReLU has no derivative at 0). *)
Lemma drelu_0_convention : drelu 0 = 0.
Proof. apply drelu_le0. lra. Qed.

Lemma relu_derive : forall x, x <> 0 -> is_derive relu x (drelu x).
Proof.
intros x Hx. destruct (Rlt_or_le x 0) as [H|H].
- rewrite drelu_le0 by lra.
  apply is_derive_on_neg with (fun _ => 0); [exact H| |auto_derive; try easy; ring].
  intros y Hy. symmetry. apply relu_le0. lra.
- rewrite drelu_gt0 by lra.
  apply is_derive_on_pos with (fun y => y); [lra| |auto_derive; try easy; ring].
  intros y Hy. symmetry. now apply relu_gt0.
Qed.

(** ** ELU (alpha = 1) *)

Definition elu (x : R) : R := if Rle_dec x 0 then exp x - 1 else x.
Definition delu (x : R) : R := if Rle_dec x 0 then exp x else 1.
Definition ELU := Activation elu delu.

Lemma elu_le0 : forall x, x <= 0 -> elu x = exp x - 1.
Proof. intros x H. unfold elu. destruct (Rle_dec x 0); lra. Qed.
Lemma elu_gt0 : forall x, 0 < x -> elu x = x.
Proof. intros x H. unfold elu. destruct (Rle_dec x 0); lra. Qed.
Lemma delu_le0 : forall x, x <= 0 -> delu x = exp x.
Proof. intros x H. unfold delu. destruct (Rle_dec x 0); lra. Qed.
Lemma delu_gt0 : forall x, 0 < x -> delu x = 1.
Proof. intros x H. unfold delu. destruct (Rle_dec x 0); lra. Qed.

(** ELU is differentiable everywhere, also at 0 (both one-sided derivatives are 1). *)
Lemma elu_derive : forall x, is_derive elu x (delu x).
Proof.
intros x. destruct (Rtotal_order x 0) as [H|[H|H]].
- rewrite delu_le0 by lra.
  apply is_derive_on_neg with (fun y => exp y - 1); [exact H| |].
  + intros y Hy. symmetry. apply elu_le0. lra.
  + auto_derive; [easy|ring].
- subst x. rewrite delu_le0, exp_0 by lra.
  apply is_derive_Reals. intros eps Heps.
  destruct (derivable_pt_lim_exp 0 eps Heps) as [delta Hd].
  exists delta. intros h Hh0 Hh.
  rewrite Rplus_0_l, (elu_le0 0), exp_0 by lra.
  destruct (Rle_dec h 0) as [Hn|Hp].
  + rewrite (elu_le0 h) by exact Hn. specialize (Hd h Hh0 Hh).
    rewrite Rplus_0_l, exp_0 in Hd. replace (exp h - 1 - (1 - 1)) with (exp h - 1) by ring.
    exact Hd.
  + rewrite (elu_gt0 h) by lra.
    replace ((h - (1 - 1)) / h - 1) with 0 by (field; lra).
    rewrite Rabs_R0. exact Heps.
- rewrite delu_gt0 by lra.
  apply is_derive_on_pos with (fun y => y); [exact H| |auto_derive; try easy; ring].
  intros y Hy. symmetry. now apply elu_gt0.
Qed.

(** ** Sigmoid, Swish (SiLU), tanh *)

Definition sigmoid (x : R) : R := 1 / (1 + exp (- x)).
Definition dsigmoid (x : R) : R := exp (- x) / (1 + exp (- x)) ^ 2.
Definition SIGMOID := Activation sigmoid dsigmoid.

Definition swish (x : R) : R := x / (1 + exp (- x)).
Definition dswish (x : R) : R := 1 / (1 + exp (- x)) + x * exp (- x) / (1 + exp (- x)) ^ 2.
Definition SWISH := Activation swish dswish.

(** tanh is the standard library's [tanh] (sinh / cosh); its derivative 1 - tanh^2. *)
Definition dtanh (x : R) : R := 1 - tanh x ^ 2.
Definition TANH := Activation tanh dtanh.

Lemma one_plus_exp_pos : forall x, 0 < 1 + exp x.
Proof. intros x. generalize (exp_pos x). lra. Qed.

Lemma sigmoid_derive : forall x, is_derive sigmoid x (dsigmoid x).
Proof.
intros x. unfold sigmoid, dsigmoid.
assert (H := one_plus_exp_pos (- x)).
auto_derive; [lra|]. field. lra.
Qed.

Lemma swish_derive : forall x, is_derive swish x (dswish x).
Proof.
intros x. unfold swish, dswish.
assert (H := one_plus_exp_pos (- x)).
auto_derive; [lra|]. field. lra.
Qed.

Lemma tanh_exp : forall x, tanh x = (exp x - exp (- x)) / (exp x + exp (- x)).
Proof.
intros x. unfold tanh, sinh, cosh. generalize (exp_pos x) (exp_pos (- x)). intros. field. lra.
Qed.

(** The form of tanh' used for numerical bounds (no cancellation): 4 / (e^x + e^-x)^2. *)
Lemma dtanh_exp : forall x, dtanh x = 4 / (exp x + exp (- x)) ^ 2.
Proof.
intros x. unfold dtanh. rewrite tanh_exp.
generalize (exp_pos x) (exp_pos (- x)). intros H1 H2.
assert (H3 : exp x * exp (- x) = 1) by (rewrite <- exp_plus; replace (x + - x) with 0 by ring; apply exp_0).
replace (1 - ((exp x - exp (- x)) / (exp x + exp (- x))) ^ 2)
  with (4 * (exp x * exp (- x)) / (exp x + exp (- x)) ^ 2) by (field; lra).
rewrite H3. field. lra.
Qed.

Lemma tanh_derive : forall x, is_derive tanh x (dtanh x).
Proof.
intros x. rewrite dtanh_exp.
apply is_derive_ext with (fun y => (exp y - exp (- y)) / (exp y + exp (- y))).
{ intros y. symmetry. apply tanh_exp. }
generalize (exp_pos x) (exp_pos (- x)). intros H1 H2.
assert (H3 : exp x * exp (- x) = 1) by (rewrite <- exp_plus; replace (x + - x) with 0 by ring; apply exp_0).
auto_derive; [lra|].
replace (4 / (exp x + exp (- x)) ^ 2) with (4 * (exp x * exp (- x)) / (exp x + exp (- x)) ^ 2)
  by (rewrite H3; field; lra).
field. lra.
Qed.

(** ** erf and GELU *)

Definition gauss (t : R) : R := exp (- (t * t)).
Definition erf (x : R) : R := 2 / sqrt PI * RInt gauss 0 x.

Definition gelu (x : R) : R := x / 2 * (1 + erf (x / sqrt 2)).
(** x phi(x), with phi the standard normal density *)
Definition x_phi (x : R) : R := x * exp (- (x * x) / 2) / sqrt (2 * PI).
Definition dgelu (x : R) : R := (1 + erf (x / sqrt 2)) / 2 + x_phi x.
Definition GELU := Activation gelu dgelu.

Lemma gauss_continuous : forall t, continuous gauss t.
Proof. intros t. apply (ex_derive_continuous (K := R_AbsRing) (V := R_NormedModule)). unfold gauss. auto_derive. easy. Qed.

Lemma ex_RInt_gauss : forall a b, ex_RInt gauss a b.
Proof. intros a b. apply (ex_RInt_continuous (V := R_CompleteNormedModule)). intros z _. apply gauss_continuous. Qed.

Lemma erf_derive : forall y, is_derive erf y (2 / sqrt PI * gauss y).
Proof.
intros y. unfold erf.
apply is_derive_scal.
apply is_derive_RInt with 0.
- apply filter_forall. intros b. apply (RInt_correct (V := R_CompleteNormedModule)). apply ex_RInt_gauss.
- apply gauss_continuous.
Qed.

Lemma sqrt2_pos : 0 < sqrt 2.
Proof. apply sqrt_lt_R0. lra. Qed.
Lemma sqrtPI_pos : 0 < sqrt PI.
Proof. apply sqrt_lt_R0. apply PI_RGT_0. Qed.

Lemma gelu_derive : forall x, is_derive gelu x (dgelu x).
Proof.
intros x. unfold gelu, dgelu, x_phi.
assert (H2 := sqrt2_pos). assert (Hp := sqrtPI_pos).
assert (He : forall y, ex_derive erf y) by (intros y; eexists; apply erf_derive).
auto_derive; [apply He|].
replace (Derive (fun x0 => erf x0) (x * / sqrt 2)) with (2 / sqrt PI * gauss (x * / sqrt 2))
  by (symmetry; apply is_derive_unique; apply erf_derive).
unfold gauss.
replace (- (x * / sqrt 2 * (x * / sqrt 2))) with (- (x * x) / 2)
  by (field_simplify; [|lra]; rewrite pow2_sqrt by lra; field).
rewrite sqrt_mult by (lra || (left; apply PI_RGT_0)).
unfold Rdiv. field. split; lra.
Qed.


(** *** Bounds of erf on half-lines *)

Lemma gauss_pos : forall t, 0 < gauss t.
Proof. intros t. apply exp_pos. Qed.

(** For 0 < c <= y: 0 <= RInt gauss c y <= exp (- c^2) / (2 c). *)
Lemma gauss_tail_pos : forall c y, 0 < c <= y ->
  0 <= RInt gauss c y <= exp (- (c * c)) / (2 * c).
Proof.
intros c y [Hc Hy]. split.
- apply RInt_ge_0; [exact Hy|apply ex_RInt_gauss|]. intros t _. apply Rlt_le, gauss_pos.
- set (g := fun t => t / c * gauss t).
  set (G := fun t => - exp (- (t * t)) / (2 * c)).
  assert (HG : is_RInt g c y (minus (G y) (G c))).
  { apply (is_RInt_derive (V := R_CompleteNormedModule)).
    - intros t _. unfold G, g, gauss. auto_derive; [easy|field; lra].
    - intros t _. apply (ex_derive_continuous (K := R_AbsRing) (V := R_NormedModule)). unfold g, gauss. auto_derive. lra. }
  apply Rle_trans with (minus (G y) (G c)).
  + apply is_RInt_le with gauss g c y; [exact Hy|apply (RInt_correct (V := R_CompleteNormedModule)), ex_RInt_gauss|exact HG|].
    intros t Ht. unfold g. rewrite <- (Rmult_1_l (gauss t)) at 1.
    apply Rmult_le_compat_r; [apply Rlt_le, gauss_pos|].
    apply Rmult_le_reg_r with c; [exact Hc|]. field_simplify; lra.
  + unfold minus, plus, opp, G. simpl.
    assert (0 < exp (- (y * y))) by apply exp_pos.
    apply Rmult_le_reg_r with (2 * c); [lra|]. field_simplify; lra.
Qed.

Lemma RInt_gauss_opp : forall a b, RInt gauss (- a) (- b) = - RInt gauss a b.
Proof.
intros a b.
replace (- a) with (-1 * a + 0) by ring. replace (- b) with (-1 * b + 0) by ring.
rewrite <- (RInt_comp_lin (V := R_CompleteNormedModule)) by apply ex_RInt_gauss.
rewrite <- (RInt_opp (V := R_CompleteNormedModule)) by (apply (ex_RInt_ext (V := R_CompleteNormedModule)) with gauss; [intros; unfold gauss; f_equal; ring|apply ex_RInt_gauss]).
apply RInt_ext. intros t _. unfold scal; simpl; unfold mult, opp; simpl.
unfold gauss. replace (-1 * t + 0) with (- t) by ring.
replace (- t * - t) with (t * t) by ring. ring.
Qed.

Lemma erf_chasles : forall a b, erf b - erf a = 2 / sqrt PI * RInt gauss a b.
Proof.
intros a b. unfold erf.
rewrite <- (RInt_Chasles (V := R_CompleteNormedModule) gauss 0 a b) by apply ex_RInt_gauss.
unfold plus; simpl. ring.
Qed.

(** For 0 < c <= y: erf c <= erf y <= erf c + exp (- c^2) / (c sqrt pi). *)
Lemma erf_upper_tail : forall c y, 0 < c <= y ->
  erf c <= erf y <= erf c + exp (- (c * c)) / (c * sqrt PI).
Proof.
intros c y Hcy. assert (Hp := sqrtPI_pos).
destruct (gauss_tail_pos c y Hcy) as [H1 H2].
assert (E := erf_chasles c y).
assert (0 < 2 / sqrt PI) by (apply Rdiv_lt_0_compat; lra).
split.
- assert (0 <= 2 / sqrt PI * RInt gauss c y) by (apply Rmult_le_pos; lra). lra.
- assert (2 / sqrt PI * RInt gauss c y <= 2 / sqrt PI * (exp (- (c * c)) / (2 * c))).
  { apply Rmult_le_compat_l; lra. }
  replace (exp (- (c * c)) / (c * sqrt PI)) with (2 / sqrt PI * (exp (- (c * c)) / (2 * c)))
    by (field; lra).
  lra.
Qed.

(** For y <= c < 0: erf c - exp (- c^2) / (|c| sqrt pi) <= erf y <= erf c. *)
Lemma erf_lower_tail : forall c y, y <= c < 0 ->
  erf c - exp (- (c * c)) / (- c * sqrt PI) <= erf y <= erf c.
Proof.
intros c y Hcy. assert (Hp := sqrtPI_pos).
destruct (gauss_tail_pos (- c) (- y)) as [H1 H2]; [lra|].
rewrite RInt_gauss_opp in H1, H2.
assert (E := erf_chasles y c).
assert (0 < 2 / sqrt PI) by (apply Rdiv_lt_0_compat; lra).
rewrite <- (opp_RInt_swap (V := R_CompleteNormedModule) gauss c y) in E by apply ex_RInt_gauss. unfold opp in E; simpl in E.
replace (- c * - c) with (c * c) in H2 by ring.
split.
- assert (2 / sqrt PI * - RInt gauss c y <= 2 / sqrt PI * (exp (- (c * c)) / (2 * - c))).
  { apply Rmult_le_compat_l; lra. }
  replace (exp (- (c * c)) / (- c * sqrt PI)) with (2 / sqrt PI * (exp (- (c * c)) / (2 * - c)))
    by (field; lra).
  lra.
- assert (0 <= 2 / sqrt PI * - RInt gauss c y) by (apply Rmult_le_pos; lra). lra.
Qed.

(** ** Exact values (the points where sigma or sigma' is a dyadic number) *)

Lemma erf_0 : erf 0 = 0.
Proof. unfold erf. rewrite RInt_point. unfold zero; simpl. ring. Qed.

Lemma elu_0 : elu 0 = 0.
Proof. rewrite elu_le0, exp_0 by lra. ring. Qed.
Lemma delu_0 : delu 0 = 1.
Proof. rewrite delu_le0, exp_0 by lra. reflexivity. Qed.

Lemma gelu_0 : gelu 0 = 0.
Proof. unfold gelu. field. Qed.
Lemma dgelu_0 : dgelu 0 = 1 / 2.
Proof.
unfold dgelu, x_phi. replace (0 / sqrt 2) with 0 by (field; generalize sqrt2_pos; lra).
rewrite erf_0. field. apply Rgt_not_eq, sqrt_lt_R0. generalize PI_RGT_0. lra.
Qed.

Lemma swish_0 : swish 0 = 0.
Proof. unfold swish. rewrite Ropp_0, exp_0. field. Qed.
Lemma dswish_0 : dswish 0 = 1 / 2.
Proof. unfold dswish. rewrite Ropp_0, exp_0. field. Qed.

Lemma sigmoid_0 : sigmoid 0 = 1 / 2.
Proof. unfold sigmoid. rewrite Ropp_0, exp_0. field. Qed.
Lemma dsigmoid_0 : dsigmoid 0 = 1 / 4.
Proof. unfold dsigmoid. rewrite Ropp_0, exp_0. field. Qed.

Lemma tanh_0 : tanh 0 = 0.
Proof. rewrite tanh_exp, Ropp_0, exp_0. field. Qed.
Lemma dtanh_0 : dtanh 0 = 1.
Proof. unfold dtanh. rewrite tanh_0. ring. Qed.

Lemma erf_opp : forall x, erf (- x) = - erf x.
Proof.
intros x. unfold erf. rewrite <- Ropp_0 at 1. rewrite RInt_gauss_opp. ring.
Qed.

(** ** erf beyond a cutoff, from bounds of erf at the cutoff *)

Lemma erf_below_cutoff : forall c lo hi y, y <= c < 0 -> lo <= erf c <= hi ->
  lo - exp (- (c * c)) / (- c * sqrt PI) <= erf y <= hi.
Proof. intros c lo hi y Hy Hc. generalize (erf_lower_tail c y Hy). lra. Qed.

Lemma erf_above_cutoff : forall c lo hi y, 0 < c <= y -> lo <= erf c <= hi ->
  lo <= erf y <= hi + exp (- (c * c)) / (c * sqrt PI).
Proof. intros c lo hi y Hy Hc. generalize (erf_upper_tail c y Hy). lra. Qed.
