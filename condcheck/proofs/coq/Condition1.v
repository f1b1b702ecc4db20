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
From Condcheck Require Import Format Activations Rounded.
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
