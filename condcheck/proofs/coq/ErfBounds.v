(** * erf at the cutoffs +-5, by the [integral] tactic

    GELU at arguments beyond 5 sqrt 2 is bounded through [erf_below_cutoff] / [erf_above_cutoff]
    (Activations.v) from these two bounds, instead of integrating exp(-t^2) up to the argument
    (an integral over [0, 40000] is out of reach of a direct bound). 1 - erf 5 is about 1.537e-12. *)

From Coq Require Import Reals Lra.
From Coquelicot Require Import Coquelicot.
From Condcheck Require Import IntervalZ Activations.
Open Scope R_scope.

Lemma erf_5_bounds : 1 - 16 / 10000000000000 <= erf 5 <= 1 - 15 / 10000000000000.
Proof. unfold erf, gauss. integral with (i_prec 70). Qed.

Lemma erf_m5_bounds : - 1 + 15 / 10000000000000 <= erf (-5) <= - 1 + 16 / 10000000000000.
Proof. replace (-5) with (- (5)) by lra. rewrite erf_opp. generalize erf_5_bounds. lra. Qed.
