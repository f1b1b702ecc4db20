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
From Condcheck Require Import Format Dyadic Activations Rounded.
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

(** ** What a certificate says about Condition 2

    The certificate's witness: delta_0, delta_1, the rounded values sigma~ and sigma~' at both,
    eta_0 (or "unbounded": sigma~'(delta_0) = 0, when every eta_0 >= 1 works; stated with
    eta_0 = 1 then), eta_1, eta_2 and k.  [Condition2_at] states every clause with those values. *)

Record witness2 := Witness2 {
  w2_delta_0 : dyadic; w2_delta_1 : dyadic;
  w2_sigma_0 : dyadic; w2_sigma_1 : dyadic; w2_dsigma_0 : dyadic; w2_dsigma_1 : dyadic;
  w2_eta_0 : Z; w2_eta_1 : Z; w2_eta_2 : Z; w2_k : Z }.

Definition Condition2_at (F : format) (A : activation) (w : witness2) : Prop :=
  let delta_0 := F2R (w2_delta_0 w) in let delta_1 := F2R (w2_delta_1 w) in
  let s0 := F2R (w2_sigma_0 w) in let s1 := F2R (w2_sigma_1 w) in
  let ds0 := F2R (w2_dsigma_0 w) in let ds1 := F2R (w2_dsigma_1 w) in
  let k := w2_k w in
  in_format F delta_0 /\ in_format F delta_1 /\
  no_overflow F (sigma A delta_0) /\ no_overflow F (sigma A delta_1) /\
  no_overflow F (dsigma A delta_0) /\ no_overflow F (dsigma A delta_1) /\
  sigma_tilde F A delta_0 = s0 /\ sigma_tilde F A delta_1 = s1 /\
  dsigma_tilde F A delta_0 = ds0 /\ dsigma_tilde F A delta_1 = ds1 /\
  (* (i) *)
  (s0 <> s1 /\ Rabs s0 <= bpow radix2 (f_emax F) /\ Rabs s1 <= bpow radix2 (f_emax F) /\
   Rabs (s0 - s1) <= bpow radix2 (f_emax F)) /\
  (* (ii) *)
  ((1 <= w2_eta_0 w)%Z /\ bpow radix2 (w2_eta_0 w) * Rabs ds0 <= Rabs ds1 /\
   Rabs ds1 = bpow radix2 k /\ bpow radix2 (- f_M F) <= Rabs ds1 <= 1) /\
  (* (iii) *)
  ((- k <= w2_eta_1 w <= f_emax F)%Z /\ (k <= w2_eta_2 w <= - f_emin F + f_M F)%Z) /\
  (* (iv) *)
  (bpow radix2 (f_emin F + w2_eta_2 w) <= Rmax (Rabs s0) (Rabs s1) <= bpow radix2 (f_emax F - w2_eta_1 w)).

Lemma Condition2_at_holds : forall F A w, Condition2_at F A w -> Condition2 F A.
Proof.
intros F A w H. cbv zeta in H.
destruct H as [V0 [V1 [N0 [N1 [M0 [M1 [S0 [S1 [D0 [D1 Rest]]]]]]]]]].
exists (F2R (w2_delta_0 w)), (F2R (w2_delta_1 w)), (w2_eta_0 w), (w2_eta_1 w), (w2_eta_2 w), (w2_k w).
cbv zeta. rewrite S0, S1, D0, D1. tauto.
Qed.
