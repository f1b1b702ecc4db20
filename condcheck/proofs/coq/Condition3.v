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
From Condcheck Require Import Format Dyadic Activations Rounded.
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

(** ** What a certificate says about Condition 3

    Route (a): zeta, sigma~'(0), and sigma~ at -zeta, 0, zeta.  Route (b): zeta, x,
    s = RN(zeta + |x|), sigma~'(x), and sigma~ at -s, 0, s.  [Condition3a_at] / [Condition3b_at]
    state the route's clauses with those values. *)

Record witness3 := Witness3 {
  w3_zeta : dyadic; w3_x : dyadic; w3_s : dyadic; w3_dsigma_at : dyadic;
  w3_sigma_minus_s : dyadic; w3_sigma_0 : dyadic; w3_sigma_s : dyadic }.

(** sigma~ is finite at t, equal to v, with |v| <= 2^e_max. *)
Definition bounded_with (F : format) (A : activation) (t v : R) : Prop :=
  no_overflow F (sigma A t) /\ sigma_tilde F A t = v /\ Rabs v <= bpow radix2 (f_emax F).

Definition Condition3a_at (F : format) (A : activation) (w : witness3) : Prop :=
  let zeta := F2R (w3_zeta w) in
  F2R (w3_s w) = zeta /\
  no_overflow F (dsigma A 0) /\ dsigma_tilde F A 0 = F2R (w3_dsigma_at w) /\
  bpow radix2 (- f_M F) <= Rabs (F2R (w3_dsigma_at w)) /\
  in_format F zeta /\ 0 < zeta /\
  bounded_with F A (- zeta) (F2R (w3_sigma_minus_s w)) /\ bounded_with F A 0 (F2R (w3_sigma_0 w)) /\
  bounded_with F A zeta (F2R (w3_sigma_s w)).

Definition Condition3b_at (F : format) (A : activation) (w : witness3) : Prop :=
  let zeta := F2R (w3_zeta w) in let x := F2R (w3_x w) in let s := F2R (w3_s w) in
  in_format F zeta /\ in_format F x /\ 0 < zeta /\ zeta <= Rabs x /\
  even_significand F x /\ no_overflow F (zeta + Rabs x) /\ RN F (zeta + Rabs x) = s /\
  no_overflow F (sigma A x) /\ no_overflow F (dsigma A x) /\
  dsigma_tilde F A x = F2R (w3_dsigma_at w) /\ bpow radix2 (- f_M F) <= Rabs (F2R (w3_dsigma_at w)) /\
  bounded_with F A (- s) (F2R (w3_sigma_minus_s w)) /\ bounded_with F A 0 (F2R (w3_sigma_0 w)) /\
  bounded_with F A s (F2R (w3_sigma_s w)).

Lemma bounded_with_at : forall F A t v, bounded_with F A t v -> bounded_at F A t.
Proof. intros F A t v [N [S B]]. split; [exact N|]. now rewrite S. Qed.

Lemma Condition3a_at_holds : forall F A w, Condition3a_at F A w -> Condition3 F A.
Proof.
intros F A w H. cbv zeta in H.
destruct H as [_ [N [D [U [Z [P [B1 [B2 B3]]]]]]]].
left. split; [exact N|]. split; [now rewrite D|].
exists (F2R (w3_zeta w)). split; [exact Z|]. split; [exact P|].
split; [|split]; eapply bounded_with_at; eassumption.
Qed.

Lemma Condition3b_at_holds : forall F A w, Condition3b_at F A w -> Condition3 F A.
Proof.
intros F A w H. cbv zeta in H.
destruct H as [Z [X [P [L [E [N [R [Nx [Mx [D [U [B1 [B2 B3]]]]]]]]]]]]].
right. exists (F2R (w3_zeta w)), (F2R (w3_x w)). cbv zeta. rewrite R.
split; [exact Z|]. split; [exact X|]. split; [exact P|]. split; [exact L|]. split; [exact E|].
split; [exact N|]. split; [exact Nx|]. split; [exact Mx|]. split; [now rewrite D|].
split; [|split]; eapply bounded_with_at; eassumption.
Qed.
