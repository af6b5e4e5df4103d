"""The files of ``landscape report``: the scorecard's tables (CSV, Markdown, LaTeX, JSON) and its figures,
written by rank 0 once every run is measured, and the check, before any work, that none of them would
replace an input or a file of another kind (``io.outputs``)."""

from __future__ import annotations

import glob
import json
import os

from ..io.atomic import write_file
from ..io.outputs import figure_replaceable, replaceable
from ..io.paths import output_path
from ..parallel import comm as comm_module
from ..parallel import devices
from ..plotting.interpolation import write_interpolation as draw_interpolation
from ..plotting.look import use
from ..plotting.palette import batch_colours
from ..plotting.study.by_batch import compared, write_measures, write_seeds
from ..plotting.study.gap import write_gap
from ..plotting.study.sharpness_loss import write_sharpness_loss
from ..plotting.study.summary import write_summary
from ..plotting.study.surfaces import write_density, write_hessian_1d, write_surfaces
from ..report import tables
from ..report.catalogue import BY_KEY
from ..report.interpolation import write_interpolation_json
from ..report.measures import flags
from ..report.minimum import away
from ..report.runs import Run, describe
from ..report.scorecard import build
from .command import plain

OUTPUT_FILES = ("{name}.csv", "{name}_runs.csv", "{name}_tests.csv", "{name}.md", "{name}.tex", "{name}.json")
FORMATS = ("png", "pdf", "svg")
STYLES = ("default", "paper", "talk")


def check_outputs(figures: str, name: str, inputs: dict, force: bool, more: tuple[str, ...] = ()) -> None:
    """The scorecard's files in ``figures`` (``OUTPUT_FILES`` and ``more``, patterns of ``name``), and its
    figures already there: nothing over an input nor over a file of another kind (``io.outputs``)."""
    if not os.path.isdir(figures):
        return
    for pattern in (*OUTPUT_FILES, "{name}_interpolation.json", *more):
        path = os.path.join(figures, pattern.format(name=name))
        output_path(path, "file", "figures")
        replaceable(path, "figures", inputs, force)
    for fmt in FORMATS:
        for path in glob.glob(os.path.join(glob.escape(figures), f"{glob.escape(name)}*.{fmt}")):
            figure_replaceable(path)


def write_report(
    results: list[dict], args, config, figures: str, skipped: list[str] = (), levels: dict | None = None
) -> tuple[dict, list[str]]:
    """The scorecard's tables, JSON and figures into ``figures``; returns its record and the files."""
    settings = {
        **args.record(),  # the command's parameters; then the measures' settings they resolve to
        "measures": {k: v for k, v in config.record().items() if v is not None},
        "matched": {arm: level.record() for arm, level in (levels or {}).items()},
    }
    card = build(
        results,
        alpha=args.alpha,
        permutations=args.permutations,
        seed=args.seed,
        settings=settings,
        left_out=list(skipped),
        endpoints=args.endpoints,
    )
    runs = [r["run"] for r in results]
    target = results[0]["target"]
    description = (
        f"{target['model']} on {target['dataset']}; "
        + describe([Run(**r) for r in runs])
        + "."
        + (f" Left out, unfinished: {', '.join(skipped)}." if skipped else "")
    )
    flag_rows = _flags(results, card)
    stem = os.path.join(figures, args.name)
    for suffix, text in (
        ("", tables.groups_csv(card)),
        ("_runs", tables.runs_csv(card)),
        ("_tests", tables.tests_csv(card)),
    ):
        write_file(f"{stem}{suffix}.csv", text.encode())
    write_file(f"{stem}.md", tables.markdown(card, description=description, flags=flag_rows).encode())
    write_file(f"{stem}.tex", tables.latex(card).encode())
    write_file(f"{stem}.json", (json.dumps(plain(card.record()), indent=2) + "\n").encode())  # NaN: null
    paths = [os.path.join(figures, pattern.format(name=args.name)) for pattern in OUTPUT_FILES]
    with use(args.style) as look:
        paths += _figures(results, args, config, card, stem, look)
        # Keskar et al.'s line from each smallest- to largest-batch network, on this rank's device
        device = devices.for_rank(args.device, comm_module.SerialComm())
        path, record = write_interpolation_json(results, config, stem, device)
        paths.append(path)
        if record["pairs"]:
            paths += draw_interpolation(record, f"{stem}_interpolation", tuple(args.formats), look.dpi or 150, look)
    paths += write_summary(results, card, args.out, stem, tuple(args.formats), args.style)  # last: reads every file
    print(f"\nVerdict ({stem}.md has the scorecard, every measure and test): {card.verdict}\n", flush=True)
    for path in paths:
        print(f"wrote {path}")
    return json.loads(json.dumps(card.record(), default=float)), [str(p) for p in paths]


def _flags(results: list[dict], card) -> list[tuple[str, str, str, str]]:
    """The flags table's rows: networks not at a minimum (``report.minimum``), matched losses off their
    level, searches that flagged their values (at the final weights or the matched ones)."""
    rows = [(name, "training and the points compared", "not at a minimum", why) for name, why in away(card.runs)]
    for result in results:
        name, matched = result["run"]["name"], result.get("matched") or {}
        if matched.get("off"):
            rows.append((name, f"matched loss {matched['level']:g}", "train loss", matched["off"]))
        for key, notes in flags(result).items():
            rows += [(name, "final weights", BY_KEY[key].label, note) for note in notes]
        for key, notes in (result.get("matched_flags") or {}).items():
            rows += [(name, "matched loss", BY_KEY[key].label, note) for note in notes]
    return rows


def _figures(results, args, config, card, stem, look) -> list[str]:
    """Every figure but the summary page, each in the report's formats; one colour per batch size in all."""
    dpi, formats = look.dpi or 150, tuple(args.formats)
    colours = batch_colours(r["batch_size"] for r in compared(card))
    paths = write_measures(card, f"{stem}_measures", formats=formats, dpi=dpi, look=look)
    paths += write_gap(card, f"{stem}_gap", formats, dpi, look)
    paths += write_seeds(card, f"{stem}_seeds", formats, dpi, look)
    paths += write_sharpness_loss(card, f"{stem}_sharpness_loss", formats, dpi, look)
    paths += write_surfaces(results, args.out, stem, colours, formats, dpi, look)
    paths += write_hessian_1d(results, args.out, f"{stem}_1d_hessian", colours, formats, dpi, look)
    paths += write_density(results, f"{stem}_density", colours, formats, dpi, look)
    return paths
