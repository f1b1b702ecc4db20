(** * Networks in the paper's order: the value and the AD gradient (SPEC 2.3)

    A network is a list of layers T_1, ..., T_L; the activation sigma~ follows every layer but the
    last, and the output is a scalar.  A layer lists, row by row, its nonzero weights
    (column, weight) by increasing column, and its biases; rows and columns are numbered from 1 by
    binary positive numbers (read in O(log n) by a computation), input j of a layer being the
    [Pos.to_nat j - 1]-th element of its input list.  Over R, with every operation rounded
    by RN and [None] for an overflow (condcheck's finite semantics: Inf or NaN anywhere fails):
    - forward, coordinate i: z_i = (((A_i1 (x) v_1) (+) (A_i2 (x) v_2)) (+) ...) (+) b_i, products
      first, summed left to right, bias last (a zero weight is left out: s (+) (0 (x) v) = s for a
      finite s, so the sums equal those of the dense matrix; [row_sum_zero_entry] proves it);
    - reverse-mode AD with upstream u: through an affine map, v_j = ((u_1 (x) A_1j) (+) (u_2 (x) A_2j))
      (+) ... over the outputs i in order; through the activation at z_j, u'_j = v_j (x) sigma~'(z_j);
      the result at the input layer is the AD gradient D_(f,x)(y).

    [value] and [gradient] are these semantics over R.  [forward_t] and [backward_t] compute the same
    on dyadic numbers (the computable rounding [rnd_d], sigma~ and sigma~' read from proved facts):
    the forward pass once per point, keeping sigma~'(z) of every hidden neuron, and from it the
    backward pass for each upstream value y listed at the point, skipping the zero entries of its
    upstream vectors (a zero adds nothing to a rounded sum of values of the format);
    [check_claim_sound] proves that what they compute is what [value] and [gradient] are, so that a
    network's claim is decided by [vm_compute]. *)

From Coq Require Import ZArith Reals Lia Lra List Bool.
From Coq Require Import FSets.FMapPositive.
From Flocq Require Import Core Operations.
From Condcheck Require Import Format Dyadic Activations Rounded.
Import ListNotations.
Open Scope R_scope.

Record layer := Layer {
  l_inputs : nat;                          (** number of inputs (columns) *)
  l_rows : list (list (positive * dyadic)); (** row i: its nonzero weights (column, A_ij) by increasing column *)
  l_bias : list dyadic }.                  (** b_i *)

Definition network := list layer.

Definition obind {T U} (o : option T) (f : T -> option U) : option U :=
  match o with Some x => f x | None => None end.

Fixpoint omap {T U} (f : T -> option U) (l : list T) : option (list U) :=
  match l with
  | [] => Some []
  | x :: l' => obind (f x) (fun y => obind (omap f l') (fun ys => Some (y :: ys)))
  end.

Fixpoint omap2 {T U V} (f : T -> U -> option V) (l1 : list T) (l2 : list U) : option (list V) :=
  match l1, l2 with
  | [], [] => Some []
  | x :: l1', y :: l2' => obind (f x y) (fun z => obind (omap2 f l1' l2') (fun zs => Some (z :: zs)))
  | _, _ => None
  end.

(** Column j of a layer: (i, A_ij) for its nonzero weights, by increasing row i. *)
Fixpoint column_from (i : positive) (rows : list (list (positive * dyadic))) (j : positive) : list (positive * dyadic) :=
  match rows with
  | [] => []
  | row :: rows' => map (fun e => (i, snd e)) (filter (fun e => Pos.eqb (fst e) j) row) ++ column_from (Pos.succ i) rows' j
  end.

(** p, p + 1, ..., p + n - 1 *)
Fixpoint pos_seq (p : positive) (n : nat) : list positive :=
  match n with O => [] | S n' => p :: pos_seq (Pos.succ p) n' end.

Definition columns (L : layer) : list (list (positive * dyadic)) :=
  map (column_from 1 (l_rows L)) (pos_seq 1 (l_inputs L)).

(** The element of a list at a positive index, counted from 1 *)
Definition at_pos (v : list R) (j : positive) : R := nth (Pos.to_nat j - 1) v 0.

(** ** The semantics over R *)

Section Real.
Variable F : format.
Variable A : activation.

(** A rounded result, or None on overflow. *)
Definition rn (x : R) : option R := if Rle_dec (Rabs (RN F x)) (Omega F) then Some (RN F x) else None.

Definition act_value (z : R) : option R := rn (sigma A z).
Definition act_deriv (z : R) : option R := rn (dsigma A z).

(** acc (+) (A_ij (x) v_j) (+) ... over the nonzero weights of a row *)
Fixpoint row_sum (acc : R) (row : list (positive * dyadic)) (v : list R) : option R :=
  match row with
  | [] => Some acc
  | (j, w) :: row' => obind (rn (F2R w * at_pos v j)) (fun p => obind (rn (acc + p)) (fun a => row_sum a row' v))
  end.

Definition affine (L : layer) (v : list R) : option (list R) :=
  omap (fun rb => obind (row_sum 0 (fst rb) v) (fun s => rn (s + F2R (snd rb)))) (combine (l_rows L) (l_bias L)).

(** acc (+) (u_i (x) A_ij) (+) ... over the nonzero weights of a column *)
Fixpoint col_sum (acc : R) (col : list (positive * dyadic)) (u : list R) : option R :=
  match col with
  | [] => Some acc
  | (i, w) :: col' => obind (rn (at_pos u i * F2R w)) (fun p => obind (rn (acc + p)) (fun a => col_sum a col' u))
  end.

Definition affine_back (L : layer) (u : list R) : option (list R) :=
  omap (fun col => col_sum 0 col u) (columns L).

Fixpoint forward (net : network) (v : list R) : option (list R) :=
  match net with
  | [] => Some v
  | [L] => affine L v
  | L :: net' => obind (affine L v) (fun z => obind (omap act_value z) (fun a => forward net' a))
  end.

(** The AD gradient at input v of the network, for the upstream vector u at its output. *)
Fixpoint backward (net : network) (v : list R) (u : list R) : option (list R) :=
  match net with
  | [] => Some u
  | [L] => affine_back L u
  | L :: net' =>
      obind (affine L v) (fun z => obind (omap act_value z) (fun a =>
      obind (backward net' a u) (fun g =>
      obind (omap2 (fun gj zj => obind (act_deriv zj) (fun d => rn (gj * d))) g z) (fun u' =>
      affine_back L u'))))
  end.

(** f(x), and D_(f,x)(y) (None: an overflow somewhere, or not a scalar output). *)
Definition value (net : network) (x : list R) : option R :=
  match forward net x with Some [y] => Some y | _ => None end.

Definition gradient (net : network) (x : list R) (y : R) : option (list R) := backward net x [y].

End Real.

(** ** What a network file claims *)

(** One point of a claim: x, f*(x), and the pairs (y, g*(x, y)) (one pair for Theorem 5: y = h*(x);
    every y covered for Theorem 7). *)
Record case := Case { case_x : list dyadic; case_value : dyadic; case_grads : list (dyadic * list dyadic) }.

Definition claim_holds (F : format) (A : activation) (net : network) (cases : list case) : Prop :=
  forall c, In c cases ->
    value F A net (map F2R (case_x c)) = Some (F2R (case_value c)) /\
    forall yg, In yg (case_grads c) ->
      gradient F A net (map F2R (case_x c)) (F2R (fst yg)) = Some (map F2R (snd yg)).

(** ** Skipping a zero weight does not change a sum *)

Lemma rn_format : forall F x, wf_format F = true -> in_format F x -> rn F x = Some x.
Proof.
intros F x Hwf [Hg Ho]. pose proof (valid_exp_F F Hwf).
unfold rn, RN. rewrite (round_generic radix2 (fexp F) ZnearestE x Hg).
destruct (Rle_dec (Rabs x) (Omega F)); [reflexivity|contradiction].
Qed.

Lemma rn_in_format : forall F x y, wf_format F = true -> rn F x = Some y -> in_format F y.
Proof.
intros F x y Hwf H. unfold rn in H. destruct (Rle_dec _ _) as [Hl|Hl]; [|discriminate].
injection H as <-. split; [|exact Hl]. pose proof (valid_exp_F F Hwf).
apply generic_format_round; auto with typeclass_instances.
Qed.

Lemma rn_zero : forall F, wf_format F = true -> rn F 0 = Some 0.
Proof.
intros F Hwf. apply rn_format; [exact Hwf|]. split; [apply generic_format_0|].
rewrite Rabs_R0. apply Rlt_le, wf_Omega_pos, Hwf.
Qed.

(** A row with an explicit zero weight sums to what the row without it sums to. *)
Lemma row_sum_zero_entry : forall F acc (j : positive) w row v, wf_format F = true -> in_format F acc ->
  F2R w = 0 -> row_sum F acc ((j, w) :: row) v = row_sum F acc row v.
Proof.
intros F acc j w row v Hwf Hacc Hw. simpl. rewrite Hw, Rmult_0_l, rn_zero by exact Hwf. simpl.
rewrite Rplus_0_r, rn_format by assumption. reflexivity.
Qed.

Lemma in_format_0 : forall F, wf_format F = true -> in_format F 0.
Proof.
intros F Hwf. split; [apply generic_format_0|]. rewrite Rabs_R0. apply Rlt_le, wf_Omega_pos, Hwf.
Qed.

(** The same for a column whose upstream entry is 0. *)
Lemma col_sum_zero_entry : forall F acc (i : positive) w col u, wf_format F = true -> in_format F acc ->
  at_pos u i = 0 -> col_sum F acc ((i, w) :: col) u = col_sum F acc col u.
Proof.
intros F acc i w col u Hwf Hacc Hu. simpl. rewrite Hu, Rmult_0_l, rn_zero by exact Hwf. simpl.
rewrite Rplus_0_r, rn_format by assumption. reflexivity.
Qed.

(** ** The same on dyadic numbers, by computation *)

(** Facts at points, in a search tree keyed by the point (Python writes them in an order that keeps
    the tree balanced). *)
Inductive ftree := FLeaf | FNode (l : ftree) (f : fact) (r : ftree).

Fixpoint finsert (f : fact) (t : ftree) : ftree :=
  match t with
  | FLeaf => FNode FLeaf f FLeaf
  | FNode l g r => if Dltb (fact_lo f) (fact_lo g) then FNode (finsert f l) g r else FNode l g (finsert f r)
  end.

Definition ftree_of (fs : list fact) : ftree := fold_left (fun t f => finsert f t) fs FLeaf.

Fixpoint flookup (t : ftree) (z : dyadic) : option rres :=
  match t with
  | FLeaf => None
  | FNode l f r =>
      if Dleb (fact_lo f) z && Dleb z (fact_hi f) then Some (fact_res f)
      else if Dltb z (fact_lo f) then flookup l z else flookup r z
  end.

Fixpoint In_ftree (f : fact) (t : ftree) : Prop :=
  match t with FLeaf => False | FNode l g r => In_ftree f l \/ f = g \/ In_ftree f r end.

Lemma In_finsert : forall f g t, In_ftree f (finsert g t) -> f = g \/ In_ftree f t.
Proof.
intros f g t. induction t as [|l IHl h r IHr]; simpl.
- intuition.
- destruct (Dltb (fact_lo g) (fact_lo h)); simpl; intros [H|[H|H]]; auto.
  + destruct (IHl H); auto.
  + destruct (IHr H); auto.
Qed.

Lemma In_fold_finsert : forall fs t f,
  In_ftree f (fold_left (fun t g => finsert g t) fs t) -> In f fs \/ In_ftree f t.
Proof.
induction fs as [|g fs IH]; simpl; intros t f H; [now right|].
destruct (IH _ _ H) as [H1|H1]; [now left; right|].
destruct (In_finsert f g t H1) as [->|H2]; [now left; left|now right].
Qed.

Lemma In_ftree_of : forall fs f, In_ftree f (ftree_of fs) -> In f fs.
Proof. intros fs f H. destruct (In_fold_finsert fs FLeaf f H) as [H1|[]]. exact H1. Qed.

Lemma flookup_sound : forall F g t z r,
  (forall f, In_ftree f t -> fact_holds F g f) -> flookup t z = Some r -> rnd_is F (g (F2R z)) r.
Proof.
intros F g t z r Ht. induction t as [|l IHl f rt IHr]; simpl; [discriminate|].
destruct (Dleb (fact_lo f) z && Dleb z (fact_hi f)) eqn:E.
- intros H. injection H as <-. apply andb_prop in E as [E1 E2]. apply Dleb_iff in E1, E2.
  apply (Ht f); [simpl; auto|]. split; assumption.
- destruct (Dltb z (fact_lo f)).
  + apply IHl. intros h Hh. apply Ht. simpl. auto.
  + apply IHr. intros h Hh. apply Ht. simpl. auto.
Qed.

(** Vectors, for access by index in O(log n). *)
Definition vec := PositiveMap.t dyadic.
Fixpoint vec_of_aux (j : positive) (l : list dyadic) (m : vec) : vec :=
  match l with [] => m | x :: l' => vec_of_aux (Pos.succ j) l' (PositiveMap.add j x m) end.

Definition vec_of (l : list dyadic) : vec := vec_of_aux 1 l (PositiveMap.empty _).

Lemma vec_of_aux_find : forall l k m j x,
  PositiveMap.find j (vec_of_aux k l m) = Some x ->
  (Pos.to_nat k <= Pos.to_nat j /\ nth_error l (Pos.to_nat j - Pos.to_nat k) = Some x)%nat \/
  PositiveMap.find j m = Some x.
Proof.
induction l as [|y l IH]; simpl; intros k m j x H.
- right. exact H.
- destruct (IH _ _ _ _ H) as [[H1 H2]|H1].
  + left. rewrite Pos2Nat.inj_succ in H1, H2. split; [lia|].
    replace (Pos.to_nat j - Pos.to_nat k)%nat with (S (Pos.to_nat j - S (Pos.to_nat k))) by lia. exact H2.
  + destruct (Pos.eq_dec j k) as [->|Hne].
    * rewrite PositiveMap.gss in H1. injection H1 as <-. left. split; [lia|].
      now rewrite Nat.sub_diag.
    * rewrite PositiveMap.gso in H1 by exact Hne. right. exact H1.
Qed.

Lemma vec_of_find : forall l j x, PositiveMap.find j (vec_of l) = Some x ->
  at_pos (map F2R l) j = F2R x.
Proof.
intros l j x H. unfold vec_of in H.
destruct (vec_of_aux_find l 1 _ j x H) as [[_ H2]|H1].
- unfold at_pos. change (Pos.to_nat 1) with 1%nat in H2. rewrite <- F2R_Dzero, map_nth. f_equal.
  now apply nth_error_nth.
- rewrite PositiveMap.gempty in H1. discriminate.
Qed.

(** ** The columns of a layer, by one pass over its rows

    [columns] (the definition the semantics reads) scans every row for every column;
    [columns_fast] distributes each row's entries to their columns in one pass (newest first, then
    reversed), and [columns_fast_eq] proves that it computes the same lists. *)

Definition col_at (m : PositiveMap.t (list (positive * dyadic))) (j : positive) : list (positive * dyadic) :=
  match PositiveMap.find j m with Some c => c | None => [] end.

Fixpoint scatter_row (i : positive) (row : list (positive * dyadic)) (m : PositiveMap.t (list (positive * dyadic))) :=
  match row with
  | [] => m
  | (j, w) :: row' => scatter_row i row' (PositiveMap.add j ((i, w) :: col_at m j) m)
  end.

Fixpoint scatter_rows (i : positive) (rows : list (list (positive * dyadic))) (m : PositiveMap.t (list (positive * dyadic))) :=
  match rows with
  | [] => m
  | row :: rows' => scatter_rows (Pos.succ i) rows' (scatter_row i row m)
  end.

Definition columns_fast (L : layer) : list (list (positive * dyadic)) :=
  let m := scatter_rows 1 (l_rows L) (PositiveMap.empty _) in
  map (fun j => rev (col_at m j)) (pos_seq 1 (l_inputs L)).

Lemma col_at_add_eq : forall m j c, col_at (PositiveMap.add j c m) j = c.
Proof. intros m j c. unfold col_at. now rewrite PositiveMap.gss. Qed.

Lemma col_at_add_neq : forall m j k c, k <> j -> col_at (PositiveMap.add k c m) j = col_at m j.
Proof. intros m j k c H. unfold col_at. rewrite PositiveMap.gso by (intros E; apply H; now symmetry). reflexivity. Qed.

Lemma col_at_scatter_row : forall row i m j,
  col_at (scatter_row i row m) j = rev (map (fun e => (i, snd e)) (filter (fun e => Pos.eqb (fst e) j) row)) ++ col_at m j.
Proof.
induction row as [|[k w] row IH]; intros i m j; [reflexivity|].
cbn [scatter_row]. rewrite IH. cbn [filter fst].
destruct (Pos.eqb_spec k j) as [->|Hne].
- rewrite col_at_add_eq. cbn [map rev snd]. now rewrite <- app_assoc.
- now rewrite col_at_add_neq.
Qed.

Lemma col_at_scatter_rows : forall rows i m j,
  col_at (scatter_rows i rows m) j = rev (column_from i rows j) ++ col_at m j.
Proof.
induction rows as [|row rows IH]; intros i m j; [reflexivity|].
cbn [scatter_rows column_from]. rewrite IH, col_at_scatter_row, rev_app_distr. now rewrite app_assoc.
Qed.

Lemma columns_fast_eq : forall L, columns_fast L = columns L.
Proof.
intros L. unfold columns_fast, columns. apply map_ext. intros j.
rewrite col_at_scatter_rows. replace (col_at (PositiveMap.empty _) j) with (@nil (positive * dyadic))
  by (unfold col_at; now rewrite PositiveMap.gempty).
rewrite app_nil_r. apply rev_involutive.
Qed.

(** Zero, tested on the significand. *)
Definition Dzero_b (d : dyadic) : bool := Z.eqb (Fnum d) 0.

Lemma Dzero_b_sound : forall d, Dzero_b d = true -> F2R d = 0.
Proof. intros [m e] H. apply Z.eqb_eq in H. simpl in H. subst m. apply F2R_0. Qed.

(** The nonzero entries of a vector, by index (an absent index reads as 0). *)
Fixpoint svec_of_aux (j : positive) (l : list dyadic) (m : vec) : vec :=
  match l with
  | [] => m
  | x :: l' => svec_of_aux (Pos.succ j) l' (if Dzero_b x then m else PositiveMap.add j x m)
  end.

Definition svec_of (l : list dyadic) : vec := svec_of_aux 1 l (PositiveMap.empty _).

Lemma svec_of_aux_find : forall l k m j x,
  PositiveMap.find j (svec_of_aux k l m) = Some x ->
  (Pos.to_nat k <= Pos.to_nat j /\ nth_error l (Pos.to_nat j - Pos.to_nat k) = Some x)%nat \/
  PositiveMap.find j m = Some x.
Proof.
induction l as [|y l IH]; cbn [svec_of_aux]; intros k m j x H.
- right. exact H.
- destruct (IH _ _ _ _ H) as [[H1 H2]|H1].
  + left. rewrite Pos2Nat.inj_succ in H1, H2. split; [lia|].
    replace (Pos.to_nat j - Pos.to_nat k)%nat with (S (Pos.to_nat j - S (Pos.to_nat k))) by lia. exact H2.
  + destruct (Dzero_b y); [right; exact H1|].
    destruct (Pos.eq_dec j k) as [->|Hne].
    * rewrite PositiveMap.gss in H1. injection H1 as <-. left. split; [lia|].
      now rewrite Nat.sub_diag.
    * rewrite PositiveMap.gso in H1 by exact Hne. right. exact H1.
Qed.

Lemma svec_of_aux_keep : forall l k m j x, PositiveMap.find j m = Some x ->
  exists x', PositiveMap.find j (svec_of_aux k l m) = Some x'.
Proof.
induction l as [|y l IH]; cbn [svec_of_aux]; intros k m j x H; [now exists x|].
destruct (Dzero_b y); [now apply (IH _ _ _ x)|].
destruct (Pos.eq_dec j k) as [->|Hne].
- apply (IH _ _ _ y). apply PositiveMap.gss.
- apply (IH _ _ _ x). rewrite PositiveMap.gso by exact Hne. exact H.
Qed.

Lemma svec_of_aux_none : forall l k m j, (Pos.to_nat k <= Pos.to_nat j)%nat ->
  PositiveMap.find j (svec_of_aux k l m) = None -> F2R (nth (Pos.to_nat j - Pos.to_nat k) l Dzero) = 0.
Proof.
induction l as [|y l IH]; cbn [svec_of_aux]; intros k m j Hk H.
- destruct (Pos.to_nat j - Pos.to_nat k)%nat; apply F2R_Dzero.
- destruct (Pos.eq_dec j k) as [->|Hne].
  + rewrite Nat.sub_diag. cbn [nth]. destruct (Dzero_b y) eqn:E; [now apply Dzero_b_sound|].
    destruct (svec_of_aux_keep l (Pos.succ k) (PositiveMap.add k y m) k y (PositiveMap.gss _ _ _)) as [x' Hx'].
    congruence.
  + assert (Hjk : Pos.to_nat j <> Pos.to_nat k) by (intros E; apply Hne, Pos2Nat.inj, E).
    assert (Hk' : (Pos.to_nat (Pos.succ k) <= Pos.to_nat j)%nat) by (rewrite Pos2Nat.inj_succ; lia).
    specialize (IH _ _ _ Hk' H). rewrite Pos2Nat.inj_succ in IH.
    replace (Pos.to_nat j - Pos.to_nat k)%nat with (S (Pos.to_nat j - S (Pos.to_nat k))) by lia. exact IH.
Qed.

Lemma svec_of_find : forall l j x, PositiveMap.find j (svec_of l) = Some x ->
  at_pos (map F2R l) j = F2R x.
Proof.
intros l j x H. unfold svec_of in H.
destruct (svec_of_aux_find l 1 _ j x H) as [[_ H2]|H1].
- unfold at_pos. change (Pos.to_nat 1) with 1%nat in H2. rewrite <- F2R_Dzero, map_nth. f_equal.
  now apply nth_error_nth.
- rewrite PositiveMap.gempty in H1. discriminate.
Qed.

Lemma svec_of_none : forall l j, PositiveMap.find j (svec_of l) = None -> at_pos (map F2R l) j = 0.
Proof.
intros l j H. unfold at_pos. rewrite <- F2R_Dzero, map_nth, F2R_Dzero.
apply (svec_of_aux_none l 1 (PositiveMap.empty _) j); [apply Pos2Nat.is_pos|exact H].
Qed.

Section Computed.
Variable F : format.
Variables sT dT : ftree.

Definition rn_d (d : dyadic) : option dyadic := let r := rnd_d F d in if fin_b F r then Some r else None.

Definition act_value_d (z : dyadic) : option dyadic :=
  match flookup sT z with Some (Fin v) => Some v | _ => None end.
Definition act_deriv_d (z : dyadic) : option dyadic :=
  match flookup dT z with Some (Fin v) => Some v | _ => None end.

Fixpoint row_sum_d (acc : dyadic) (row : list (positive * dyadic)) (v : vec) : option dyadic :=
  match row with
  | [] => Some acc
  | (j, w) :: row' => obind (PositiveMap.find j v) (fun x =>
      obind (rn_d (Fmult w x)) (fun p => obind (rn_d (Fplus acc p)) (fun a => row_sum_d a row' v)))
  end.

Definition affine_d (L : layer) (v : vec) : option (list dyadic) :=
  omap (fun rb => obind (row_sum_d Dzero (fst rb) v) (fun s => rn_d (Fplus s (snd rb)))) (combine (l_rows L) (l_bias L)).

(** [x * y] rounded, with a product by a zero read as the exact 0 it is (no rounding computed). *)
Definition rn_mult_d (x y : dyadic) : option dyadic :=
  if Dzero_b x || Dzero_b y then Some Dzero else rn_d (Fmult x y).

(** The backward pass reads its upstream vector from [svec_of u], which holds only the nonzero
    entries: an absent index is a zero (as [at_pos] reads it), whose product and sum leave the
    accumulated value unchanged ([col_sum_zero_entry]), so it is skipped. *)
Fixpoint col_sum_d (acc : dyadic) (col : list (positive * dyadic)) (u : vec) : option dyadic :=
  match col with
  | [] => Some acc
  | (i, w) :: col' => match PositiveMap.find i u with
      | None => col_sum_d acc col' u
      | Some x => obind (rn_d (Fmult x w)) (fun p => obind (rn_d (Fplus acc p)) (fun a => col_sum_d a col' u))
      end
  end.

Definition affine_back_d (cols : list (list (positive * dyadic))) (u : vec) : option (list dyadic) :=
  omap (fun col => col_sum_d Dzero col u) cols.

(** A layer with its columns, computed once per network. *)
Definition prepare (net : network) : list (layer * list (list (positive * dyadic))) :=
  map (fun L => (L, columns_fast L)) net.

(** The forward pass at one point, computed once: the output, and for every hidden layer the values
    sigma~'(z_j) at its pre-activations z (the tape the backward pass reads, for every upstream y). *)
Fixpoint forward_t (P : list (layer * list (list (positive * dyadic)))) (v : list dyadic)
  : option (list (list dyadic) * list dyadic) :=
  match P with
  | [] => Some ([], v)
  | [(L, _)] => obind (affine_d L (vec_of v)) (fun y => Some ([], y))
  | (L, _) :: P' =>
      obind (affine_d L (vec_of v)) (fun z => obind (omap act_value_d z) (fun a =>
      obind (omap act_deriv_d z) (fun ds => obind (forward_t P' a) (fun r => Some (ds :: fst r, snd r)))))
  end.

(** The backward pass for the upstream vector u, from the tape of [forward_t]. *)
Fixpoint backward_t (P : list (layer * list (list (positive * dyadic)))) (ts : list (list dyadic))
  (u : list dyadic) : option (list dyadic) :=
  match P, ts with
  | [], _ => Some u
  | [(L, cols)], _ => affine_back_d cols (svec_of u)
  | (L, cols) :: P', ds :: ts' =>
      obind (backward_t P' ts' u) (fun g => obind (omap2 rn_mult_d g ds) (fun u' =>
      affine_back_d cols (svec_of u')))
  | _ :: _, [] => None
  end.

Fixpoint list_eqb (l1 l2 : list dyadic) : bool :=
  match l1, l2 with
  | [], [] => true
  | x :: l1', y :: l2' => Deqb x y && list_eqb l1' l2'
  | _, _ => false
  end.

Definition check_case (P : list (layer * list (list (positive * dyadic)))) (c : case) : bool :=
  match forward_t P (case_x c) with
  | Some (ts, [y]) =>
      Deqb y (case_value c) &&
      forallb (fun yg => match backward_t P ts [fst yg] with
                         | Some g => list_eqb g (snd yg) | None => false end) (case_grads c)
  | _ => false
  end.

Definition check_claim (net : network) (cases : list case) : bool :=
  let P := prepare net in forallb (check_case P) cases.

End Computed.

(** ** Soundness: what is computed on dyadics is the semantics over R *)

Section Soundness.
Variable F : format.
Hypothesis Hwf : wf_format F = true.
Variable A : activation.
Variables fs fd : list fact.
Hypothesis Hfs : Forall (fact_holds F (sigma A)) fs.
Hypothesis Hfd : Forall (fact_holds F (dsigma A)) fd.
Let sT := ftree_of fs.
Let dT := ftree_of fd.

Lemma rn_d_sound : forall d r, rn_d F d = Some r -> rn F (F2R d) = Some (F2R r).
Proof.
intros d r H. unfold rn_d in H. destruct (fin_b F (rnd_d F d)) eqn:E; [|discriminate].
injection H as <-. apply fin_b_iff in E. unfold rn. rewrite <- (rnd_d_correct F Hwf d).
destruct (Rle_dec _ _); [reflexivity|contradiction].
Qed.

Lemma tree_facts : forall g fl, Forall (fact_holds F g) fl -> forall f, In_ftree f (ftree_of fl) -> fact_holds F g f.
Proof.
intros g fl H f Hf. apply In_ftree_of in Hf. rewrite Forall_forall in H. now apply H.
Qed.

Lemma act_value_d_sound : forall z v, act_value_d sT z = Some v -> act_value F A (F2R z) = Some (F2R v).
Proof.
intros z v H. unfold act_value_d in H. destruct (flookup sT z) as [[w|]|] eqn:E; try discriminate.
injection H as <-. destruct (flookup_sound F _ sT z _ (tree_facts _ _ Hfs) E) as [H1 H2].
unfold act_value, rn. rewrite H1. destruct (Rle_dec _ _); [reflexivity|contradiction].
Qed.

Lemma act_deriv_d_sound : forall z v, act_deriv_d dT z = Some v -> act_deriv F A (F2R z) = Some (F2R v).
Proof.
intros z v H. unfold act_deriv_d in H. destruct (flookup dT z) as [[w|]|] eqn:E; try discriminate.
injection H as <-. destruct (flookup_sound F _ dT z _ (tree_facts _ _ Hfd) E) as [H1 H2].
unfold act_deriv, rn. rewrite H1. destruct (Rle_dec _ _); [reflexivity|contradiction].
Qed.

Lemma omap_sound : forall (fdy : dyadic -> option dyadic) (fr : R -> option R),
  (forall x y, fdy x = Some y -> fr (F2R x) = Some (F2R y)) ->
  forall l l', omap fdy l = Some l' -> omap fr (map F2R l) = Some (map F2R l').
Proof.
intros fdy fr Hf. induction l as [|x l IH]; simpl; intros l' H.
- now injection H as <-.
- destruct (fdy x) as [y|] eqn:E1; [|discriminate]. simpl in H.
  destruct (omap fdy l) as [ys|] eqn:E2; [|discriminate]. injection H as <-.
  rewrite (Hf _ _ E1). simpl. rewrite (IH _ eq_refl). reflexivity.
Qed.

Lemma row_sum_d_sound : forall row acc l s, row_sum_d F acc row (vec_of l) = Some s ->
  row_sum F (F2R acc) row (map F2R l) = Some (F2R s).
Proof.
induction row as [|[j w] row IH]; simpl; intros acc l s H.
- now injection H as <-.
- destruct (PositiveMap.find j (vec_of l)) as [x|] eqn:Ex; [|discriminate]. simpl in H.
  destruct (rn_d F (Fmult w x)) as [p|] eqn:Ep; [|discriminate]. simpl in H.
  destruct (rn_d F (Fplus acc p)) as [a|] eqn:Ea; [|discriminate]. simpl in H.
  rewrite (vec_of_find l j x Ex), <- F2R_mult, (rn_d_sound _ _ Ep). simpl.
  rewrite <- F2R_plus, (rn_d_sound _ _ Ea). simpl. now apply IH.
Qed.

Lemma affine_d_sound : forall L l z, affine_d F L (vec_of l) = Some z ->
  affine F L (map F2R l) = Some (map F2R z).
Proof.
intros L l. unfold affine_d, affine. generalize (combine (l_rows L) (l_bias L)). clear L.
induction l0 as [|[row b] rbs IH]; simpl; intros z H.
- now injection H as <-.
- destruct (row_sum_d F Dzero row (vec_of l)) as [s|] eqn:Es; [|discriminate]. simpl in H.
  destruct (rn_d F (Fplus s b)) as [y|] eqn:Ey; [|discriminate]. simpl in H.
  destruct (omap _ rbs) as [ys|] eqn:Eys; [|discriminate]. injection H as <-.
  assert (Hs := row_sum_d_sound _ _ _ _ Es). rewrite F2R_Dzero in Hs. rewrite Hs. simpl.
  rewrite <- F2R_plus, (rn_d_sound _ _ Ey). simpl. rewrite (IH _ eq_refl). reflexivity.
Qed.

Lemma rn_mult_d_sound : forall x y r, rn_mult_d F x y = Some r -> rn F (F2R x * F2R y) = Some (F2R r).
Proof.
intros x y r. unfold rn_mult_d.
destruct (Dzero_b x) eqn:Ex; [|destruct (Dzero_b y) eqn:Ey]; cbn [orb]; intros H.
- injection H as <-. rewrite (Dzero_b_sound _ Ex), Rmult_0_l, F2R_Dzero. apply rn_zero, Hwf.
- injection H as <-. rewrite (Dzero_b_sound _ Ey), Rmult_0_r, F2R_Dzero. apply rn_zero, Hwf.
- rewrite <- F2R_mult. apply rn_d_sound, H.
Qed.

Lemma col_sum_d_sound : forall col acc l s, in_format F (F2R acc) ->
  col_sum_d F acc col (svec_of l) = Some s -> col_sum F (F2R acc) col (map F2R l) = Some (F2R s).
Proof.
induction col as [|[i w] col IH]; intros acc l s Hacc H; cbn [col_sum_d] in H.
- now injection H as <-.
- destruct (PositiveMap.find i (svec_of l)) as [x|] eqn:Ex.
  + destruct (rn_d F (Fmult x w)) as [p|] eqn:Ep; [|discriminate]. cbn [obind] in H.
    destruct (rn_d F (Fplus acc p)) as [a|] eqn:Ea; [|discriminate]. cbn [obind] in H.
    assert (Ha := rn_d_sound _ _ Ea). rewrite F2R_plus in Ha.
    simpl. rewrite (svec_of_find l i x Ex), <- F2R_mult, (rn_d_sound _ _ Ep). simpl.
    rewrite Ha. simpl. apply IH; [|exact H]. exact (rn_in_format F _ _ Hwf Ha).
  + rewrite (col_sum_zero_entry F _ i w col _ Hwf Hacc (svec_of_none l i Ex)). now apply IH.
Qed.

Lemma affine_back_d_sound : forall L l g, affine_back_d F (columns_fast L) (svec_of l) = Some g ->
  affine_back F L (map F2R l) = Some (map F2R g).
Proof.
intros L l. rewrite columns_fast_eq. unfold affine_back_d, affine_back. generalize (columns L). clear L.
induction l0 as [|col cols IH]; simpl; intros g H.
- now injection H as <-.
- destruct (col_sum_d F Dzero col (svec_of l)) as [s|] eqn:Es; [|discriminate]. simpl in H.
  destruct (omap _ cols) as [ys|] eqn:Eys; [|discriminate]. injection H as <-.
  assert (Hs := col_sum_d_sound _ _ _ _ (eq_ind_r (in_format F) (in_format_0 F Hwf) F2R_Dzero) Es).
  rewrite F2R_Dzero in Hs. rewrite Hs. simpl. rewrite (IH _ eq_refl). reflexivity.
Qed.

Lemma omap2_t_sound : forall g z ds u', omap (act_deriv_d dT) z = Some ds ->
  omap2 (rn_mult_d F) g ds = Some u' ->
  omap2 (fun gj zj => obind (act_deriv F A zj) (fun d => rn F (gj * d))) (map F2R g) (map F2R z) = Some (map F2R u').
Proof.
induction g as [|x g IH]; intros [|w z] ds u' Hds H; cbn [omap] in Hds.
- injection Hds as <-. cbn in H. injection H as <-. reflexivity.
- destruct (act_deriv_d dT w); [|discriminate]. cbn [obind] in Hds.
  destruct (omap (act_deriv_d dT) z); [|discriminate]. injection Hds as <-. discriminate.
- injection Hds as <-. discriminate.
- destruct (act_deriv_d dT w) as [d|] eqn:Ed; [|discriminate]. cbn [obind] in Hds.
  destruct (omap (act_deriv_d dT) z) as [ds'|] eqn:Eds; [|discriminate]. injection Hds as <-.
  cbn [omap2] in H. destruct (rn_mult_d F x d) as [p|] eqn:Ep; [|discriminate]. cbn [obind] in H.
  destruct (omap2 (rn_mult_d F) g ds') as [ps|] eqn:Eps; [|discriminate]. injection H as <-.
  cbn [map omap2]. rewrite (act_deriv_d_sound _ _ Ed). cbn [obind].
  rewrite (rn_mult_d_sound _ _ _ Ep). cbn [obind]. rewrite (IH _ _ _ Eds Eps). reflexivity.
Qed.

(** The forward pass computed once is the network's value, and the backward pass from its tape is
    the AD gradient, for every upstream vector. *)
Lemma forward_t_sound : forall net v ts y, forward_t F sT dT (prepare net) v = Some (ts, y) ->
  forward F A net (map F2R v) = Some (map F2R y) /\
  forall u g, backward_t F (prepare net) ts u = Some g -> backward F A net (map F2R v) (map F2R u) = Some (map F2R g).
Proof.
induction net as [|L net IH]; intros v ts y H.
- cbn in H. injection H as <- <-. split; [reflexivity|].
  intros u g Hg. cbn in Hg |- *. injection Hg as <-. reflexivity.
- destruct net as [|L' net'].
  + change (forward_t F sT dT (prepare [L]) v) with
      (obind (affine_d F L (vec_of v)) (fun y => Some ([] : list (list dyadic), y))) in H.
    destruct (affine_d F L (vec_of v)) as [y'|] eqn:E; [|discriminate]. cbn [obind] in H.
    injection H as <- <-. split.
    * change (forward F A [L] (map F2R v)) with (affine F L (map F2R v)). now apply affine_d_sound.
    * intros u g Hg. change (backward_t F (prepare [L]) [] u) with (affine_back_d F (columns_fast L) (svec_of u)) in Hg.
      change (backward F A [L] (map F2R v) (map F2R u)) with (affine_back F L (map F2R u)).
      now apply affine_back_d_sound.
  + change (forward_t F sT dT (prepare (L :: L' :: net')) v) with
      (obind (affine_d F L (vec_of v)) (fun z => obind (omap (act_value_d sT) z) (fun a =>
       obind (omap (act_deriv_d dT) z) (fun ds => obind (forward_t F sT dT (prepare (L' :: net')) a)
       (fun r => Some (ds :: fst r, snd r)))))) in H.
    destruct (affine_d F L (vec_of v)) as [z|] eqn:Ez; [|discriminate]. cbn [obind] in H.
    destruct (omap (act_value_d sT) z) as [a|] eqn:Ea; [|discriminate]. cbn [obind] in H.
    destruct (omap (act_deriv_d dT) z) as [ds|] eqn:Eds; [|discriminate]. cbn [obind] in H.
    destruct (forward_t F sT dT (prepare (L' :: net')) a) as [[ts' y']|] eqn:Er; [|discriminate].
    cbn [obind fst snd] in H. injection H as <- <-.
    destruct (IH _ _ _ Er) as [IH1 IH2]. split.
    * change (forward F A (L :: L' :: net') (map F2R v)) with
        (obind (affine F L (map F2R v)) (fun z => obind (omap (act_value F A) z)
          (fun a => forward F A (L' :: net') a))).
      rewrite (affine_d_sound _ _ _ Ez). cbn [obind].
      rewrite (omap_sound _ _ act_value_d_sound _ _ Ea). cbn [obind]. exact IH1.
    * intros u g Hg.
      change (backward_t F (prepare (L :: L' :: net')) (ds :: ts') u) with
        (obind (backward_t F (prepare (L' :: net')) ts' u) (fun g => obind (omap2 (rn_mult_d F) g ds)
          (fun u' => affine_back_d F (columns_fast L) (svec_of u')))) in Hg.
      destruct (backward_t F (prepare (L' :: net')) ts' u) as [g'|] eqn:Eg; [|discriminate]. cbn [obind] in Hg.
      destruct (omap2 (rn_mult_d F) g' ds) as [u'|] eqn:Eu; [|discriminate]. cbn [obind] in Hg.
      change (backward F A (L :: L' :: net') (map F2R v) (map F2R u)) with
        (obind (affine F L (map F2R v)) (fun z => obind (omap (act_value F A) z) (fun a =>
         obind (backward F A (L' :: net') a (map F2R u)) (fun g =>
         obind (omap2 (fun gj zj => obind (act_deriv F A zj) (fun d => rn F (gj * d))) g z) (fun u' =>
         affine_back F L u'))))).
      rewrite (affine_d_sound _ _ _ Ez). cbn [obind].
      rewrite (omap_sound _ _ act_value_d_sound _ _ Ea). cbn [obind].
      rewrite (IH2 _ _ Eg). cbn [obind]. rewrite (omap2_t_sound _ _ _ _ Eds Eu). cbn [obind].
      now apply affine_back_d_sound.
Qed.

Lemma list_eqb_sound : forall l1 l2, list_eqb l1 l2 = true -> map F2R l1 = map F2R l2.
Proof.
induction l1 as [|x l1 IH]; intros [|y l2] H; simpl in H |- *; try discriminate; [reflexivity|].
apply andb_prop in H as [H1 H2]. apply Deqb_iff in H1. rewrite H1, (IH _ H2). reflexivity.
Qed.

Theorem check_claim_sound : forall net cases,
  check_claim F sT dT net cases = true -> claim_holds F A net cases.
Proof.
intros net cases H c Hc. unfold check_claim in H. rewrite forallb_forall in H.
specialize (H c Hc). unfold check_case in H.
destruct (forward_t F sT dT (prepare net) (case_x c)) as [[ts [|y [|y' l]]]|] eqn:E; try discriminate.
apply andb_prop in H as [H1 H2]. destruct (forward_t_sound _ _ _ _ E) as [Hf Hb]. split.
- apply Deqb_iff in H1. unfold value. rewrite Hf. simpl. now rewrite H1.
- intros yg Hyg. rewrite forallb_forall in H2. specialize (H2 yg Hyg).
  destruct (backward_t F (prepare net) ts [fst yg]) as [g|] eqn:Eg; [|discriminate].
  unfold gradient. change [F2R (fst yg)] with (map F2R [fst yg]).
  rewrite (Hb _ _ Eg). now rewrite (list_eqb_sound _ _ H2).
Qed.

End Soundness.
