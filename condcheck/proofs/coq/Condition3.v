(** * Condition 3: a first-layer gradient source

    As in conditions/condition3.py, clause by clause.  At least one of:
    - (a) sigma~'(0) is finite with |sigma~'(0)| >= 2^-M, and there is zeta in F, zeta > 0, such
          that sigma~ is finite with |sigma~(t)| <= 2^e_max at t in {-zeta, 0, zeta};
    - (b) there are zeta in F, zeta > 0, and x in F with |x| >= zeta such that the last bit of the
          significand of x is 0, s = RN(zeta + |x|) is finite, sigma~(x) and sigma~'(x) are finite
          with |sigma~'(x)| >= 2^-M, and sigma~ is finite with |sigma~(t)| <= 2^e_max at
          t in {-s, 0, s}. *)

From Coq Require Import ZArith Reals.
From Flocq Require Import Core.
From Condcheck Require Import Format Activations Rounded.
Open Scope R_scope.

(** sigma~ is finite at t with |sigma~(t)| <= 2^e_max. *)
Definition bounded_at (F : format) (A : activation) (t : R) : Prop :=
  no_overflow F (sigma A t) /\ Rabs (sigma_tilde F A t) <= bpow radix2 (f_emax F).

Definition Condition3 (F : format) (A : activation) : Prop :=
  (* (a) *)
  (no_overflow F (dsigma A 0) /\ bpow radix2 (- f_M F) <= Rabs (dsigma_tilde F A 0) /\
   exists zeta, in_format F zeta /\ 0 < zeta /\
     bounded_at F A (- zeta) /\ bounded_at F A 0 /\ bounded_at F A zeta)
  \/
  (* (b) *)
  (exists zeta x, in_format F zeta /\ in_format F x /\ 0 < zeta /\ zeta <= Rabs x /\
     even_significand F x /\ no_overflow F (zeta + Rabs x) /\
     no_overflow F (sigma A x) /\ no_overflow F (dsigma A x) /\
     bpow radix2 (- f_M F) <= Rabs (dsigma_tilde F A x) /\
     let s := RN F (zeta + Rabs x) in
     bounded_at F A (- s) /\ bounded_at F A 0 /\ bounded_at F A s).
