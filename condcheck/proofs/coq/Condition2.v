(** * Condition 2: gradient suppression (and exact pass-through) without overflow

    As in conditions/condition2.py, clause by clause.  There are delta_0, delta_1 in F and
    integers eta_0, eta_1, eta_2 such that sigma~ and sigma~' are finite at delta_0 and delta_1, and
    - (i)   sigma~(delta_0) <> sigma~(delta_1) and |sigma~(delta_0)|, |sigma~(delta_1)|,
            |sigma~(delta_0) - sigma~(delta_1)| <= 2^e_max (the difference taken exactly, in R);
    - (ii)  eta_0 >= 1, 2^eta_0 |sigma~'(delta_0)| <= |sigma~'(delta_1)|, and
            sigma~'(delta_1) = +-2^k for an integer k with 2^-M <= |sigma~'(delta_1)| <= 1;
    - (iii) -k <= eta_1 <= e_max and k <= eta_2 <= -e_min + M;
    - (iv)  2^(e_min + eta_2) <= max(|sigma~(delta_0)|, |sigma~(delta_1)|) <= 2^(e_max - eta_1). *)

From Coq Require Import ZArith Reals.
From Flocq Require Import Core.
From Condcheck Require Import Format Activations Rounded.
Open Scope R_scope.

Definition Condition2 (F : format) (A : activation) : Prop :=
  exists (delta_0 delta_1 : R) (eta_0 eta_1 eta_2 k : Z),
  let s0 := sigma_tilde F A delta_0 in let s1 := sigma_tilde F A delta_1 in
  let ds0 := dsigma_tilde F A delta_0 in let ds1 := dsigma_tilde F A delta_1 in
  in_format F delta_0 /\ in_format F delta_1 /\
  no_overflow F (sigma A delta_0) /\ no_overflow F (sigma A delta_1) /\
  no_overflow F (dsigma A delta_0) /\ no_overflow F (dsigma A delta_1) /\
  (* (i) *)
  (s0 <> s1 /\ Rabs s0 <= bpow radix2 (f_emax F) /\ Rabs s1 <= bpow radix2 (f_emax F) /\
   Rabs (s0 - s1) <= bpow radix2 (f_emax F)) /\
  (* (ii) *)
  ((1 <= eta_0)%Z /\ bpow radix2 eta_0 * Rabs ds0 <= Rabs ds1 /\
   Rabs ds1 = bpow radix2 k /\ bpow radix2 (- f_M F) <= Rabs ds1 <= 1) /\
  (* (iii) *)
  ((- k <= eta_1 <= f_emax F)%Z /\ (k <= eta_2 <= - f_emin F + f_M F)%Z) /\
  (* (iv) *)
  (bpow radix2 (f_emin F + eta_2) <= Rmax (Rabs s0) (Rabs s1) <= bpow radix2 (f_emax F - eta_1)).
