"""The ``condcheck`` command line.  Exit codes: 0 holds/verified, 1 fails, 2 bad input."""
from __future__ import annotations

import json
import re
import sys

import click

from .errors import CondcheckError
from .progress import STYLES, bar, set_style, working


class _Group(click.Group):
    """Turns every CondcheckError, and click's own usage errors, into a one-line message and exit status 2
    (never a traceback, never a usage block)."""

    def main(self, *args, **kwargs):
        if kwargs.get("standalone_mode", True) is False:
            return super().main(*args, **kwargs)
        kwargs["standalone_mode"] = False
        try:
            code = super().main(*args, **kwargs)
        except click.UsageError as e:
            where = e.ctx.command_path if e.ctx is not None else "condcheck"
            click.echo(f"error: {one_line(e.format_message())} (see {where} --help)", err=True)
            sys.exit(e.exit_code)
        except click.ClickException as e:
            click.echo(f"error: {one_line(e.format_message())}", err=True)
            sys.exit(e.exit_code)
        except click.Abort:
            click.echo("aborted", err=True)
            sys.exit(1)
        sys.exit(code if isinstance(code, int) else 0)

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except CondcheckError as e:
            click.echo(f"error: {one_line(str(e))}", err=True)
            ctx.exit(2)


#: the help of every command's --quiet
QUIET_HELP = "No progress on stderr (by default a bar, drawn only when stderr is a terminal: see condcheck --progress)."


def one_line(message: str) -> str:
    """A message as one line, with any numpy scalar repr (np.float64(0.3)) shown as its number."""
    message = re.sub(r"\bnp\.[a-z]+[0-9]*\(([^()]*)\)", r"\1", message)
    return " ".join(message.split())


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--plugin", "plugins", multiple=True, metavar="MODULE[:ATTR]",
              help="Import a module that registers activations, or load MODULE:ATTR as an entry point of the "
                   "condcheck.activations group would (an Activation or a callable that registers). Repeatable.")
@click.option("--progress", "progress_style", type=click.Choice(STYLES), default="auto", show_default=True,
              help="How long runs show progress on stderr: auto (a bar when stderr is a terminal), bar, lines "
                   "(a plain line every minute with the time left, for logs) or off. --quiet turns it off.")
def main(plugins=(), progress_style="auto"):
    """condcheck: Conditions 1-3 of floating-point networks with AD, and exact constructions.

    \b
    Examples:
      condcheck formats
      condcheck check gelu float8_e4m3
      condcheck verify net.json
      condcheck bench --list

    Exit status: 0 holds / verified, 1 fails, 2 bad input, 3 undecided.
    """
    set_style(progress_style)
    if plugins:
        from .activations import load_plugin_spec
        for spec in plugins:
            load_plugin_spec(spec)


@main.command()
@click.option("--json", "as_json", is_flag=True, help="Print the table as JSON.")
def formats(as_json):
    """List the supported formats and their fields.

    \b
    Example:
      condcheck formats
    Custom IEEE-like formats are named bM_E (M fraction bits, E exponent bits), e.g. b3_6.
    """
    from .formats import all_formats

    rows = [f.describe() for f in all_formats()]
    if as_json:
        click.echo(json.dumps(rows, indent=1))
        return
    cols = ["name", "bits", "M", "E", "e_min", "e_max", "max", "smallest_normal", "smallest_subnormal", "eps",
            "inf", "nan", "neg_zero", "finite_values"]
    head = ["name", "bits", "M", "E", "e_min", "e_max", "Omega (max)", "min normal", "min subnormal", "eps",
            "inf", "NaN", "-0", "finite values"]
    table = [[_cell(r[c]) for c in cols] for r in rows]
    widths = [max(len(h), *(len(t[i]) for t in table)) for i, h in enumerate(head)]
    click.echo("  ".join(h.ljust(w) for h, w in zip(head, widths)))
    for t in table:
        click.echo("  ".join(s.ljust(w) for s, w in zip(t, widths)))
    click.echo("Custom IEEE-like formats: bM_E, e.g. b3_6 (3 fraction bits, 6 exponent bits).")


@main.command()
@click.option("--json", "as_json", is_flag=True, help="Print the list as JSON.")
def activations(as_json):
    """List the registered activations (built-ins, then plug-ins) with their definitions.

    \b
    Example:
      condcheck activations
      condcheck --plugin mypkg.acts:SOFTSIGN activations
    The paper's six activations are marked with *.
    """
    from .activations import BUILTIN_ACTIVATIONS, PAPER_ACTIVATIONS, get_activation, list_activations

    rows = []
    for name in list_activations():
        act = get_activation(name)
        rows.append({"name": name, "aliases": list(act.aliases), "paper": name in PAPER_ACTIVATIONS,
                     "builtin": name in BUILTIN_ACTIVATIONS, "expression": str(act.expr),
                     "description": act.description})
    if as_json:
        click.echo(json.dumps(rows, indent=1))
        return
    width = max(len(r["name"]) for r in rows)
    for r in rows:
        mark = "*" if r["paper"] else " "
        kind = "" if r["builtin"] else " [plug-in]"
        alias = f" (alias {', '.join(r['aliases'])})" if r["aliases"] else ""
        click.echo(f"{mark} {r['name'].ljust(width)}  {r['description'] or r['expression']}{alias}{kind}")


def _cell(v) -> str:
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        return f"{v:.6g}"
    if isinstance(v, int):
        return f"{v:,}"
    return str(v)


@main.command()
@click.argument("activation")
@click.argument("format")
@click.option("--implementation", "-i", default="exact", show_default=True,
              help="How sigma~ and sigma~' are computed: exact (correctly rounded), float32-upcast, torch "
                   "(PyTorch CPU: its table up to 16 bits, its float32 kernels on float32), or a registered "
                   "plug-in implementation (docs/plugins.md).")
@click.option("--method", "-m", type=click.Choice(["auto", "exhaustive", "symbolic"]), default="auto",
              show_default=True, help="auto: enumerate formats of at most 16 bits, symbolic beyond; exhaustive: "
                                      "enumerate every value (float32: 2^32 values in chunks on Dask); symbolic: "
                                      "the certified symbolic checkers on any format.")
@click.option("--scheduler", default=None, metavar="tcp://HOST:PORT",
              help="With --method exhaustive beyond 16 bits: run the chunks on this Dask cluster (default: a local "
                   "cluster of worker processes on all cores).")
@click.option("--workers", type=click.IntRange(min=1), default=None,
              help="Worker processes of the local Dask cluster (default: all usable cores).")
@click.option("--quiet", "-q", is_flag=True, help=QUIET_HELP)
@click.option("--json", "as_json", is_flag=True, help="Print the condition certificate (docs/file-formats.md) as JSON.")
def check(activation, format, implementation, method, scheduler, workers, quiet, as_json):
    """Decide Conditions 1-3 for an activation on a format.

    \b
    Examples:
      condcheck check gelu float8_e4m3
      condcheck check relu b3_6 --json
      condcheck check tanh float32 --implementation torch --method exhaustive
    Conditions are checked under finite semantics (docs/semantics.md); the output says so.
    Exit status 0 when all conditions hold, 1 when one fails, 3 when undecided, 2 on bad input.
    """
    from .check import check_activation

    res = check_activation(activation, format, implementation, method, scheduler=scheduler, workers=workers,
                           progress=False if quiet else None)
    click.echo(json.dumps(res.to_certificate(), indent=1) if as_json else res.text())
    sys.exit({True: 0, False: 1, None: 3}[res.holds])


@main.command()
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--exact", is_flag=True, help="Use the exact rational reference interpreter (slow).")
@click.option("--dense", is_flag=True, help="Use the dense vectorized interpreter on every neuron (default: the "
                                            "tables one for small networks, else the sparse one where it "
                                            "applies; bit-identical, much faster on constructed networks).")
@click.option("--tables", is_flag=True, help="Use the interpreter on the format's rounding tables (formats of at "
                                             "most 1024 values: the same values, fastest on small networks; "
                                             "elsewhere the dense one).")
@click.option("--semantics", type=click.Choice(["finite", "ieee"]), default=None,
              help="Override the file's semantics: finite (Inf/NaN anywhere fails) or ieee (IEEE 754 "
                   "through Inf; NaN or a non-finite output/gradient fails).  Default: the file's, "
                   "finite if it names none.")
@click.option("--quiet", "-q", is_flag=True, help=QUIET_HELP)
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
def verify(file, exact, dense, tables, semantics, quiet, as_json):
    """Re-check the claim of a network file (docs/file-formats.md) on every listed input, exactly.

    \b
    Example:
      condcheck verify net.json
    Exit status 0 when every value and AD gradient equals the claim, 1 when one does not.
    """
    from .netfile import load_network
    from .verify import verify as run

    net, claim = load_network(file)
    if semantics is not None:
        net.semantics = semantics
    if claim is None:
        click.echo(f"{file}: the network has no claim; nothing to verify")
        sys.exit(2)
    method = "exact" if exact else "tables" if tables else "dense" if dense else "auto"
    res = run(net, claim, method=method, progress=bar("verifying", quiet, "point"))
    if as_json:
        click.echo(json.dumps(res.to_dict(), indent=1))
    else:
        click.echo(f"network: {net.format.name}, {net.activation} ({net.implementation}), depth {net.depth}, "
                   f"widths {net.widths}, theorem {claim.theorem}, semantics {net.semantics}")
        click.echo(res.summary())
    sys.exit(0 if res.ok else 1)


@main.command()
@click.argument("certificate", type=click.Path(dir_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@click.option("--enumerate", "enumerate_wide", is_flag=True,
              help="Beyond 16 bits: re-derive Condition 1's dead tail by enumerating it (on Dask; float32: "
                   "minutes to hours).")
@click.option("--scheduler", default=None, metavar="tcp://HOST:PORT", help="With --enumerate: this Dask cluster.")
@click.option("--workers", type=click.IntRange(min=1), default=None,
              help="With --enumerate: worker processes of the local Dask cluster (default: all usable cores).")
@click.option("--quiet", "-q", is_flag=True, help=QUIET_HELP)
def recheck(certificate, as_json, enumerate_wide, scheduler, workers, quiet):
    """Re-derive every statement of a condition certificate without the search code.

    \b
    Example:
      condcheck check gelu float8_e4m3 --json > cert.json
      condcheck recheck cert.json
    Every field of the certificate (schema condcheck.check/2) is re-proved: witnesses and reported
    values recomputed, "fails" re-enumerated (at most 16 bits) or re-proved from their covers, the
    overall verdict, the theorem branch, M_sigma, H_sigma and the depth bounds derived again.
    Exit status 0 when every statement was re-proved, 1 naming the first statement that was not
    (false, unknown or not provable), 2 for a file that is not a certificate.  An exhaustive verdict beyond
    16 bits (float32) has statements about every value: recheck names those it did not re-derive and
    exits 1 (--enumerate re-derives the dead tail of Condition 1).
    """
    from .recheck import recheck_file

    if enumerate_wide:
        from .distributed import Engine
        with Engine(scheduler, workers, progress=False if quiet else None) as eng:
            res = recheck_file(certificate, enumerate_wide=True, runner=eng)
    else:
        res = recheck_file(certificate)
    if as_json:
        click.echo(json.dumps(res, indent=1))
    elif res["ok"]:
        for k, v in res["conditions"].items():
            state = "nothing claimed" if v["verdict"] == "undecided" else "re-proved"
            click.echo(f"Condition {k}: {v['verdict']} ({v['method']}): {state}")
        click.echo(f"{res['activation']} on {res['format']} ({res['implementation']}): certificate re-checked, "
                   f"every statement re-proved ({res['checks']:,} checks)")
    else:
        p = res["problem"]
        if res["not_rederived"]:
            click.echo(f"NOT RE-PROVED: every statement recheck re-derived is true ({res['checks']:,} checks), but "
                       f"{len(res['not_rederived'])} statement(s) were not re-derived:")
            for q in res["not_rederived"]:
                click.echo(f"  {q['statement']}: {q['problem']}")
        else:
            click.echo(f"RE-CHECK FAILED at {p['statement']}: {p['problem']}")
    sys.exit(0 if res["ok"] else 1)


@main.command()
@click.option("--markdown", is_flag=True, help="Print the table as Markdown (docs/matrix.md).")
@click.option("--quiet", "-q", is_flag=True, help=QUIET_HELP)
@click.option("--json", "as_json", is_flag=True, help="Print every cell's verdicts as JSON.")
def matrix(markdown, quiet, as_json):
    """Verdicts of Conditions 1-3 for every built-in activation x the 14 formats of the conditions issue.

    \b
    Example:
      condcheck matrix --markdown
    Cells: the marks of Conditions 1, 2, 3 (h holds, F fails, ? undecided), then the overall verdict.
    """
    from . import matrix as mx

    results, seconds = mx.verdict_matrix(progress=bar("checking", quiet, "check"))
    if as_json:
        click.echo(json.dumps({f"{a} {f}": {"holds": r.holds, **{k: r.conditions[k]["holds"] for k in "123"}}
                               for (a, f), r in results.items()}, indent=1))
        return
    click.echo(mx.markdown(results))
    click.echo("")
    for line in mx.failing_clauses(results):
        click.echo(f"- {line}")
    click.echo(f"\n{len(results)} checks in {seconds:.1f} s")


def _domain_points(act, fmt, domain, dim, dim_given=True):
    """The points of --domain: the full box of dimension dim, 'sample:N[:SEED]' (N distinct random points of
    the box), or a JSON file of points (its dimension must be --dim's when --dim is given)."""
    from .cli_checks import dimension, sample_spec
    from .targets import box_sample, full_box, load_points
    if domain == "full":
        return full_box(act, fmt, dimension(dim))
    if domain.startswith("sample:"):
        n, seed = sample_spec(domain)
        return box_sample(act, fmt, dimension(dim), n, seed)
    return load_points(domain, dimension(dim) if dim_given else None)


def _dim_given(ctx) -> bool:
    return ctx.get_parameter_source("dim") is not click.core.ParameterSource.DEFAULT


def _network_summary(out, fmt, act, X, net, seconds, bounds, extra=None) -> dict:
    """The summary `construct` prints (or --json) for a built and verified network; extra keys follow dim."""
    return {"file": out, "format": fmt.name, "activation": act, "points": int(X.shape[0]), "dim": int(X.shape[1]),
            **(extra or {}), "depth": net.depth, "widths": net.widths, "parameters": net.parameter_count,
            "nonzero_parameters": net.nonzero_parameters, "seconds": round(seconds, 2), "verified": True,
            "paper_depth_bounds": bounds}


@main.group()
def construct():
    """Build a network realizing a theorem of the paper, verified exactly before it is written.

    \b
    Example:
      condcheck construct theorem5 relu float8_e4m3 --domain full --dim 1 --targets random:1 --out net.json
      condcheck construct theorem7 relu float6_e3m2fn --domain full --dim 1 --targets random:1 --out net7.json
    """


@construct.command("theorem5")
@click.argument("activation")
@click.argument("format")
@click.option("--domain", default="full", show_default=True,
              help="'full' (every point of the box [-M_sigma, M_sigma]^dim), 'sample:N[:SEED]' (N distinct "
                   "random points of the box, d = 1) or a JSON file with a list of points.")
@click.option("--dim", default=1, show_default=True, type=int, help="Input dimension d of the full box.")
@click.option("--targets", default="random:0", show_default=True,
              help="'random:SEED', 'python:FILE.py' (functions values, upstream, gradients of the point's "
                   "coordinates, results rounded to the format) or a JSON file with lists values, upstream, "
                   "gradients.")
@click.option("--upstream-max", default=0.25, show_default=True, type=float,
              help="Largest |h*| of random targets (up to the paper's H_sigma; see docs/constructions.md).")
@click.option("--implementation", "-i", default="exact", show_default=True)
@click.option("--out", required=True, type=click.Path(dir_okay=False), help="Network file to write (docs/file-formats.md).")
@click.option("--jobs", "-j", type=click.IntRange(min=1), default=None,
              help="Worker processes for the per-point searches (default: the environment variable "
                   "CONDCHECK_JOBS if set, else the usable CPUs; 1: all in this process). The network is the "
                   "same for every value.")
@click.option("--scheduler", default=None, metavar="tcp://HOST:PORT",
              help="A Dask scheduler for the chunks of large-format domains (16-bit boxes); default: a local "
                   "cluster of --jobs worker processes. The network is the same either way.")
@click.option("--checkpoint", default=None, type=click.Path(file_okay=False), metavar="DIR",
              help="Large-format domains split in chunks (16-bit boxes): keep every chunk's result in DIR as it "
                   "arrives; the same command again with the same DIR reads the chunks done and runs the rest.")
@click.option("--quiet", "-q", is_flag=True, help=QUIET_HELP)
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
@click.pass_context
def construct_theorem5_cmd(ctx, activation, format, domain, dim, targets, upstream_max, implementation, out, jobs,
                           scheduler, checkpoint, quiet, as_json):
    """Theorem 5: f(x) = f*(x) and D_(f,x)(h*(x)) = g*(x) on every point of the domain.

    \b
    Example:
      condcheck construct theorem5 relu float8_e4m3 --domain full --dim 1 --targets random:1 --out net.json
      condcheck verify net.json
    Exit status 0 when the network was built and verified, 1 when the construction failed (the message
    names the point and the requirement), 2 for bad input.
    """
    import time

    from .formats import get_format
    from .netfile import save_network
    from .targets import load_python_targets, load_targets, parse_targets, random_targets
    from .theorem5 import ConstructionError, construct_theorem5
    from .activations import get_activation
    from .check import depth_bounds
    from .cli_checks import output_file
    from .rounded_activation import get_implementation
    from .cli_checks import upstream_max as check_upstream_max

    fmt = get_format(format)
    act = get_activation(activation).name
    get_implementation(implementation)
    output_file(out)
    kind, arg = parse_targets(targets)
    check_upstream_max(upstream_max)
    X = _domain_points(act, fmt, domain, dim, _dim_given(ctx))
    if kind == "random":
        f, h, g = random_targets(fmt, X, arg, upstream_max)
    elif kind == "python":
        f, h, g = load_python_targets(arg)
    else:
        f, h, g = load_targets(arg, X.shape[0], X.shape[1])
    t0 = time.perf_counter()
    if quiet:
        set_style("off")                # (the verification's bar on Dask workers, the assembly's lines too)
    try:
        spread = {}
        net, claim = construct_theorem5(act, fmt, X, f, h, g, implementation=implementation,
                                        progress=bar("constructing (gradients, then values)", quiet), jobs=jobs,
                                        scheduler=scheduler, stats=spread, checkpoint=checkpoint)
    except ConstructionError as e:
        click.echo(f"construction failed: {e}", err=True)
        sys.exit(1)
    seconds = time.perf_counter() - t0
    with working(f"writing {out}", quiet):
        save_network(out, net, claim)
    bounds = depth_bounds(fmt)["theorem5"]
    summary = _network_summary(out, fmt, act, X, net, seconds, bounds,
                               {k: spread[k] for k in ("chunks", "chunk_runs", "sample", "passes", "workers", "engine",
                                                       "verify_parts", "chunk_worker_peak_mib", "verify_worker_peak_mib",
                                                       "worker_peak_mib",
                                                       "caller_peak_mib", "checkpoint_read", "checkpoint_written",
                                                       "checkpoint_unreadable", "shared_resends")
                                if k in spread})
    if as_json:
        click.echo(json.dumps(summary, indent=1))
    else:
        click.echo(f"theorem 5 network for {act} on {fmt.name}: {X.shape[0]} points (d = {X.shape[1]}), depth "
                   f"{net.depth} (paper: L >= {bounds['openreview']} OpenReview / {bounds['arxiv_v2']} arXiv v2), "
                   f"widths {net.widths}, "
                   f"{net.nonzero_parameters:,} nonzero of {net.parameter_count:,} parameters; built and verified "
                   f"exactly in {seconds:.1f} s; written to {out}")


@construct.command("theorem7")
@click.argument("activation")
@click.argument("format")
@click.option("--domain", default="full", show_default=True,
              help="'full' (every point of the box [-M_sigma, M_sigma]^dim) or a JSON file with a list of points.")
@click.option("--dim", default=1, show_default=True, type=int, help="Input dimension d (only d = 1 so far).")
@click.option("--targets", default="random:0", show_default=True,
              help="'random:SEED' (random values; random tables odd in y with zeros and +-Omega) or a JSON file "
                   "with lists values (N), upstream (K: the y covered) and gradients (N x K), odd in y.")
@click.option("--implementation", "-i", default="exact", show_default=True)
@click.option("--out", required=True, type=click.Path(dir_okay=False), help="Network file to write (docs/file-formats.md).")
@click.option("--quiet", "-q", is_flag=True, help=QUIET_HELP)
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
@click.pass_context
def construct_theorem7_cmd(ctx, activation, format, domain, dim, targets, implementation, out, quiet, as_json):
    """Theorem 7: f(x) = f*(x) and D_(f,x)(y) = g*(x, y) for every x of the domain and every y.

    \b
    Example:
      condcheck construct theorem7 relu float6_e3m2fn --domain full --dim 1 --targets random:1 --out net7.json
      condcheck verify net7.json
    Supported: formats of at most 16 bits; relu (its own construction up to 64 points and d = 1; formats
    with a value strictly between 1/2 and 1, e.g. float6_e3m2fn, float8_e4m3, float8_e5m2) and any
    activation that satisfies Conditions 1-3 (the generic construction; checked: all six on the full
    float8_e4m3 and float8_e5m2 boxes, d = 1, and on 8 x 8 grids, d = 2). --domain full is the d = 1 box;
    for d >= 2 give sample:N or a points file (random targets: one table per coordinate). With random
    targets every y with |y| <= H_sigma is covered (Omega for relu, elu, gelu, swish; 2^(M-1) for
    sigmoid, 2^(M-2) for tanh). Exit status 0 when the network was built and verified, 1 when the
    construction failed (the message says why), 2 for bad input (--domain full with --dim 2, targets not
    odd in y: the message names the first (x, y)).
    """
    import time

    import numpy as np

    from .activations import get_activation
    from .errors import CondcheckError
    from .formats import get_format
    from .netfile import save_network
    from .check import depth_bounds
    from .targets import load_odd_tables, parse_targets, random_odd_tables
    from .theorem7 import ConstructionError, construct_theorem7

    from .cli_checks import output_file
    from .rounded_activation import get_implementation

    fmt = get_format(format)
    act = get_activation(activation).name
    get_implementation(implementation)
    if domain == "full" and dim != 1:
        raise CondcheckError(f"--domain full supports d = 1 (the full d = {dim} box is the d = 1 box to the power "
                             f"{dim}); for d = {dim} use --domain sample:N[:SEED] or a JSON file of points")
    output_file(out)
    kind, arg = parse_targets(targets)
    X = _domain_points(act, fmt, domain, dim, _dim_given(ctx))
    if kind == "random":
        from .check import paper_constants
        Y = fmt.values().astype(float)
        H = paper_constants(act, fmt)["H_sigma"]
        if H is not None:
            Y = Y[np.abs(Y) <= float(H)]                  # every y with |y| <= H_sigma
        f, G = random_odd_tables(fmt, X, Y, arg, per_coordinate=X.shape[1] > 1)
    else:
        f, Y, G = load_odd_tables(arg, X.shape[0], X.shape[1])
    t0 = time.perf_counter()
    try:
        with working("constructing and verifying", quiet):
            res = construct_theorem7(act, fmt, X, f, G, upstream=Y, implementation=implementation)
    except ConstructionError as e:
        click.echo(f"construction failed: {e}", err=True)
        sys.exit(1)
    seconds = time.perf_counter() - t0
    net = res.network
    save_network(out, net, res.claim)
    bounds = depth_bounds(fmt)["theorem7"]
    summary = _network_summary(out, fmt, act, X, net, seconds, bounds,
                               {"upstream_values": int(len(Y)), "checks": int(X.shape[0] * len(Y))})
    if as_json:
        click.echo(json.dumps(summary, indent=1))
    else:
        click.echo(f"theorem 7 network for {act} on {fmt.name}: {X.shape[0]} points (d = {X.shape[1]}) x {len(Y)} upstream "
                   f"values y = {X.shape[0] * len(Y):,} (x, y) pairs; depth {net.depth} (paper bound 2^(E+1) + 2M + 9 "
                   f"= {bounds['openreview']} OpenReview / + 11 = {bounds['arxiv_v2']} arXiv v2), widths {net.widths}, "
                   f"{net.nonzero_parameters:,} nonzero of {net.parameter_count:,} parameters; built and verified "
                   f"exactly in {seconds:.1f} s; written to {out}")


@main.command()
@click.argument("cases", nargs=-1)
@click.option("--list", "list_only", is_flag=True, help="List the benchmark cases.")
@click.option("--json", "as_json", is_flag=True, help="Print the results as JSON.")
@click.option("--repeat", default=1, show_default=True, type=click.IntRange(1, 100),
              help="Run each case this many times (fresh processes) and report the fastest run and every time.")
def bench(cases, list_only, as_json, repeat):
    """Run the speed benchmarks (time and peak memory, each case in a fresh process).

    \b
    Examples:
      condcheck bench --list
      condcheck bench interpreter-float16-depth10-width256
      condcheck bench --repeat 3 theorem5-relu-float8_e4m3-box    # best of three fresh runs
      condcheck bench            # every case
    CASES may be names or prefixes (e.g. tables-float16); a CASE that is a whole name selects only that
    case (theorem5-gelu-float8_e4m3-box, not also ...-box2).  Each run also reports the machine
    reference: the seconds of a fixed workload (a Python loop and small numpy operations) measured in
    the same process just before; compare times only at similar reference times.
    """
    from . import bench as b

    if list_only:
        for name, (_, target) in b.CASES.items():
            click.echo(f"{name:45s} target: {target}")
        return
    names = b.select(cases)
    if not names:
        from .errors import UnknownNameError
        raise UnknownNameError("benchmark case", cases[0], b.CASES)

    def echo(r):
        if as_json:
            return
        if "error" in r:
            click.echo(f"{r['case']:45s} ERROR {r['error']}")
        else:
            runs = f" best of {len(r['runs'])}: {', '.join(f'{t:.2f}' for t in r['runs'])};" if len(r["runs"]) > 1 else ""
            workers = f" (workers: {r['worker_peak_mib']:.1f} MiB each at most)" if r.get("worker_peak_mib") else ""
            click.echo(f"{r['case']:45s} {r['seconds']:8.2f} s ({r['cpu_seconds']:.2f} CPU s;{runs} "
                       f"{r['wall_seconds_with_startup']:.2f} s with process start and imports; machine "
                       f"reference {r['reference_seconds']:.2f} s)  peak "
                       f"{r['peak_mib']:7.1f} MiB{workers}  ({r['target']}; {r['detail']})")
    res = b.run(names, echo, repeat)
    if as_json:
        click.echo(json.dumps(res, indent=1))


# ---- reports (issue 6) ------------------------------------------------------------------------------
@main.command()
@click.argument("activation", required=False)
@click.argument("format", required=False)
@click.option("--implementation", "-i", default="exact", show_default=True,
              help="How sigma~ and sigma~' are computed: exact (correctly rounded) or float32-upcast.")
@click.option("--all", "all_", is_flag=True,
              help="Every built-in activation x the 14 matrix formats, plus catalog.tex and macros.tex.")
@click.option("--network", "network", type=click.Path(dir_okay=False),
              help="A construction report for a network file (docs/file-formats.md) instead of a condition report.")
@click.option("--out", default="condcheck-reports", show_default=True, type=click.Path(file_okay=False),
              help="Folder for the .tex, .json and figure files (created; relative to the current directory).")
@click.option("--pdf", is_flag=True, help="Also run pdflatex on every .tex written.")
@click.option("--no-figures", is_flag=True, help="Leave out the sigma~ / sigma~' figure (faster).")
@click.option("--figure-format", type=click.Choice(["png", "pdf"]), default="png", show_default=True)
@click.option("--quiet", "-q", is_flag=True, help=QUIET_HELP)
@click.option("--json", "as_json", is_flag=True, help="Print the written files (and the verdict) as JSON.")
@click.option("--proof", type=click.Path(file_okay=False),
              help="A Coq development of the pair (condcheck prove --out DIR): the report says it is kernel-checked.")
def report(activation, format, implementation, all_, network, out, pdf, no_figures, figure_format, quiet, as_json,
           proof):
    """Write LaTeX reports: one (activation, format), --all with a catalog, or --network FILE.

    \b
    Examples:
      condcheck report gelu float8_e4m3 --pdf
      condcheck report --all --out paper/reports
      condcheck report --network net.json
    A condition report holds each condition's statement, verdict, witnesses (hex, fraction, bits),
    evidence, the theorem branch, M_sigma, H_sigma, depth bounds and a figure; the certificate is
    written beside it as JSON. Exit status 0 when the files were written (whatever the verdicts; they
    are in the reports), 1 when a network report's verification fails, 2 on bad input or when
    pdflatex is missing or fails.
    """
    import time

    from reports import condition_report as rp

    modes = sum([bool(activation or format), all_, bool(network)])
    if modes != 1 or (activation and not format):
        raise click.UsageError("give ACTIVATION FORMAT, or --all, or --network FILE (exactly one)")
    if proof and not activation:
        raise click.UsageError("--proof goes with ACTIVATION FORMAT (the pair the development proves)")
    from .cli_checks import output_folder
    if activation:
        from .activations import get_activation
        from .formats import get_format
        from .rounded_activation import get_implementation
        get_activation(activation), get_format(format), get_implementation(implementation)
    output_folder(out)
    figures = not no_figures
    say = (lambda msg: None) if as_json else click.echo
    t0 = time.perf_counter()
    if network:
        from reports.network_report import write_network_report
        rep = write_network_report(network, out=out, progress=bar("verifying", quiet, "point"))
        written = [rep.tex]
        say(f"{rep.tex}: {rep.summary}")
    elif all_:
        info = rp.write_all(out, figures=figures, image_format=figure_format, progress=bar("report", quiet, "report"))
        written = [info["out"] / "catalog.tex"] + [info["out"] / f"{rp.stem(a, f)}.tex" for a, f in info["results"]]
        say(f"{info['reports']} reports, catalog.tex and macros.tex ({info['macros']:,} macros) written to "
                   f"{out} in {info['seconds']:.1f} s")
    else:
        rep = rp.write_report(activation, format, implementation, out=out, figures=figures,
                              image_format=figure_format, proof=proof)
        written = [rep.tex]
        say(f"{rep.tex}: Conditions 1-3 {rp.VERDICT_WORD[rep.result.holds]} "
                   f"(1 {rep.result.conditions['1']['verdict']}, 2 {rep.result.conditions['2']['verdict']}, "
                   f"3 {rep.result.conditions['3']['verdict']}); certificate {rep.json}"
                   + (f"; figure {rep.figure}" if rep.figure else ""))
    if pdf:
        show = bar("pdflatex", quiet, "file") if len(written) > 1 else None
        for i, tex in enumerate(written, 1):
            rp.compile_pdf(tex)
            if show:
                show(i, len(written), tex.name)
        say(f"{len(written)} PDF file(s) compiled in {out} ({time.perf_counter() - t0:.1f} s in all)")
    if as_json:
        summary = {"written": [str(t) for t in written], "pdf": bool(pdf),
                   "seconds": round(time.perf_counter() - t0, 2)}
        if network:
            summary["verified"] = bool(rep.verified)
        elif not all_:
            summary["holds"] = rep.result.holds
        click.echo(json.dumps(summary, indent=1))
    if network and not rep.verified:
        sys.exit(1)


from .proofs.cli import prove_cmd  # noqa: E402  (condcheck prove: Coq developments, condcheck/proofs/)
main.add_command(prove_cmd)

if __name__ == "__main__":
    main()
