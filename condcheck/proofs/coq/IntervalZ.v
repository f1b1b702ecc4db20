(** * Interval's tactics on floats with integer (Z) significands, without primitive numbers

    [From Interval Require Import Tactic] gives [interval] and [integral] computing on Coq's
    primitive floats (without [i_prec]) or on big integers built from primitive 63-bit integers
    (with [i_prec]); either way [Print Assumptions] then lists the axioms that specify those
    primitive types.  This file instantiates Interval's own tactic functor with its floats on
    plain [Z] ([Specific_stdz]), so that [interval with (i_prec p)] and [integral with (i_prec p)]
    compute with no primitive number, and a proof by them rests only on the axioms of Coq's reals.
    Every call must give [i_prec]: without it the functor still selects the primitive floats. *)

From Interval Require Export Tactic.
From Interval Require Import Specific_ops Specific_stdz.

Module ZFloat := SpecificFloat StdZRadix2.
Module ZIntervalTactic := IntervalTactic ZFloat.
Export ZIntervalTactic.
