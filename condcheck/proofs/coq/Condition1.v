(** * Condition 1 (condcheck's statement: the states the Theorem 5 constructor gates with)

    As in conditions/condition1.py, clause by clause.  With L = sigma~(-Omega):
    - (a) dead tail: there is z_d in F, z_d >= -Omega/2, such that sigma~(z) = L and
          sigma~'(z) = 0 for every finite z in F with z <= z_d (L finite);
    - (b) live state: there is z in F, z > z_d, with sigma~(z) finite and sigma~(z) <> L;
    - (c) constant state: there is b in F with sigma~(b) = 2^k for an integer k;
    - (d) zero state: there is z in F with sigma~(z) = 0;
    - (e) pass state: there is z in F, z > z_d, with sigma~'(z) = +-2^k for an integer k.
    sigma~ = RN o sigma, sigma~' = RN o sigma' ([Rounded]); "finite" is [no_overflow]. *)

From Coq Require Import ZArith Reals.
From Flocq Require Import Core.
From Condcheck Require Import Format Dyadic Activations Rounded.
Open Scope R_scope.

Definition Condition1 (F : format) (A : activation) : Prop :=
  let L := sigma_tilde F A (- Omega F) in
  exists z_d : R, in_format F z_d /\ - Omega F / 2 <= z_d /\
  (* (a) dead tail *)
  (no_overflow F (sigma A (- Omega F)) /\
   forall z, in_format F z -> z <= z_d -> sigma_tilde F A z = L /\ dsigma_tilde F A z = 0) /\
  (* (b) live state *)
  (exists z, in_format F z /\ z_d < z /\ no_overflow F (sigma A z) /\ sigma_tilde F A z <> L) /\
  (* (c) constant state *)
  (exists b, in_format F b /\ no_overflow F (sigma A b) /\
             exists k : Z, sigma_tilde F A b = bpow radix2 k) /\
  (* (d) zero state *)
  (exists z, in_format F z /\ sigma_tilde F A z = 0) /\
  (* (e) pass state *)
  (exists z, in_format F z /\ z_d < z /\ no_overflow F (dsigma A z) /\
             exists k : Z, Rabs (dsigma_tilde F A z) = bpow radix2 k).

(** ** What a certificate says about Condition 1

    A certificate (condcheck check --json) gives a witness with the rounded values it claims:
    z_d, L, the live state and sigma~ there, the constant state and sigma~ there, the zero state,
    the pass state and sigma~' there.  [Condition1_at] states every clause at that witness, with
    those values; it implies [Condition1]. *)

Record witness1 := Witness1 {
  w1_z_d : dyadic; w1_L : dyadic;
  w1_live : dyadic; w1_sigma_live : dyadic;
  w1_constant : dyadic; w1_sigma_constant : dyadic;
  w1_zero : dyadic;
  w1_pass : dyadic; w1_dsigma_pass : dyadic }.

Definition Condition1_at (F : format) (A : activation) (w : witness1) : Prop :=
  let z_d := F2R (w1_z_d w) in let L := F2R (w1_L w) in
  let live := F2R (w1_live w) in let b := F2R (w1_constant w) in
  let zero := F2R (w1_zero w) in let pass := F2R (w1_pass w) in
  in_format F z_d /\ - Omega F / 2 <= z_d /\
  (* (a) *)
  no_overflow F (sigma A (- Omega F)) /\ sigma_tilde F A (- Omega F) = L /\
  (forall z, in_format F z -> z <= z_d -> sigma_tilde F A z = L /\ dsigma_tilde F A z = 0) /\
  (* (b) *)
  in_format F live /\ z_d < live /\ no_overflow F (sigma A live) /\
  sigma_tilde F A live = F2R (w1_sigma_live w) /\ F2R (w1_sigma_live w) <> L /\
  (* (c) *)
  in_format F b /\ no_overflow F (sigma A b) /\ sigma_tilde F A b = F2R (w1_sigma_constant w) /\
  (exists k : Z, F2R (w1_sigma_constant w) = bpow radix2 k) /\
  (* (d) *)
  in_format F zero /\ sigma_tilde F A zero = 0 /\
  (* (e) *)
  in_format F pass /\ z_d < pass /\ no_overflow F (dsigma A pass) /\
  dsigma_tilde F A pass = F2R (w1_dsigma_pass w) /\
  (exists k : Z, Rabs (F2R (w1_dsigma_pass w)) = bpow radix2 k).

Lemma Condition1_at_holds : forall F A w, Condition1_at F A w -> Condition1 F A.
Proof.
intros F A w H. cbv zeta in H.
destruct H as [Hz [Hh [NL [EL [Ha [Lv [Ll [Ln [Ls [Lne [Bv [Bn [Bs [Bk [Zv [Zs [Pv [Pl [Pn [Ps Pk]]]]]]]]]]]]]]]]]]]].
unfold Condition1. cbv zeta. rewrite EL.
exists (F2R (w1_z_d w)). split; [exact Hz|]. split; [exact Hh|]. split; [split; [exact NL|exact Ha]|].
split; [exists (F2R (w1_live w)); rewrite Ls; auto|].
split; [exists (F2R (w1_constant w)); rewrite Bs; auto|].
split; [exists (F2R (w1_zero w)); auto|].
exists (F2R (w1_pass w)). rewrite Ps. auto.
Qed.
