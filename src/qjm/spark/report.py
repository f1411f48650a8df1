"""An HTML report of small result tables, with bar and line plots drawn by matplotlib.

The plots are embedded as PNG data URIs, so report.html is one self-contained file.
"""

from __future__ import annotations

import base64
import html
import io
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class Table:
    """A titled table: column names and rows of plain values."""

    title: str
    columns: list[str]
    rows: Sequence[Sequence[Any]]
    note: str = ""


@dataclass
class Plot:
    """A titled bar (or line) plot of one or more series over shared labels."""

    title: str
    labels: list[str]
    series: dict[str, list[float]]
    kind: str = "bar"  # "bar", "barh" or "line"
    ylabel: str = ""
    stacked: bool = False
    png: bytes | None = None  # drawn ahead by draw_plots (else when the page is rendered)


@dataclass
class Report:
    """A report: a title, headline figures, then plots and tables in order."""

    title: str
    figures: dict[str, Any] = field(default_factory=dict)
    parts: list[Table | Plot] = field(default_factory=list)


def human_bytes(n: float) -> str:
    """Bytes with a binary unit, e.g. 1.5 GiB."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if abs(n) < 1024 or unit == "PiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} PiB"  # pragma: no cover - the loop returns


def preload() -> None:
    """Import matplotlib (about a second), e.g. in a thread while Spark starts."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot


def draw_plots(plots: Sequence[Plot]) -> None:
    """Draw each plot's PNG now (one thread at a time may draw: pyplot is not thread-safe)."""
    for plot in plots:
        if plot.png is None:
            plot.png = plot_png(plot)


def plot_png(plot: Plot) -> bytes:
    """The plot drawn as a PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    n = max(len(plot.labels), 1)
    width = min(14.0, max(6.0, 0.35 * n)) if plot.kind == "bar" else 9.0
    height = max(3.5, 0.28 * n) if plot.kind == "barh" else 4.5
    fig, ax = plt.subplots(figsize=(width, height))
    try:
        xs = list(range(len(plot.labels)))
        bottom = [0.0] * len(xs)
        k = len(plot.series) or 1
        for j, (name, values) in enumerate(plot.series.items()):
            if plot.kind == "line":
                ax.plot(xs, values, marker="o", label=name)
            elif plot.kind == "barh":
                ax.barh(xs, values, label=name)
            elif plot.stacked:
                ax.bar(xs, values, bottom=bottom, label=name)
                bottom = [b + v for b, v in zip(bottom, values, strict=True)]
            else:
                w = 0.8 / k
                ax.bar([x - 0.4 + w * (j + 0.5) for x in xs], values, width=w, label=name)
        if plot.kind == "barh":
            ax.set_yticks(xs, plot.labels)
            ax.invert_yaxis()
            ax.set_xlabel(plot.ylabel)
        else:
            tilt = n > 8
            ax.set_xticks(
                xs, plot.labels, rotation=60 if tilt else 0, ha="right" if tilt else "center"
            )
            ax.set_ylabel(plot.ylabel)
        if len(plot.series) > 1:
            ax.legend(fontsize="small")
        ax.set_title(plot.title)
        fig.tight_layout()
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=90)
        return buf.getvalue()
    finally:
        plt.close(fig)


def _cell(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:,.2f}"
    if isinstance(v, int) and not isinstance(v, bool):
        return f"{v:,}"
    return html.escape("" if v is None else str(v))


def render_html(report: Report) -> str:
    """The report as one HTML page."""
    out = [
        "<!DOCTYPE html><html><head><meta charset='utf-8'>",
        f"<title>{html.escape(report.title)}</title><style>",
        "body{font-family:sans-serif;margin:2em;max-width:70em}"
        "table{border-collapse:collapse;margin:.5em 0 1.5em}"
        "td,th{border:1px solid #ccc;padding:.2em .6em;text-align:right}"
        "th{background:#eee}td:first-child{text-align:left}img{max-width:100%}",
        "</style></head><body>",
        f"<h1>{html.escape(report.title)}</h1>",
    ]
    if report.figures:
        out.append("<table>")
        for k, v in report.figures.items():
            out.append(f"<tr><th>{html.escape(k)}</th><td>{_cell(v)}</td></tr>")
        out.append("</table>")
    for part in report.parts:
        out.append(f"<h2>{html.escape(part.title)}</h2>")
        if isinstance(part, Plot):
            data = base64.b64encode(part.png or plot_png(part)).decode()
            out.append(f"<img alt='{html.escape(part.title)}' src='data:image/png;base64,{data}'>")
            continue
        if part.note:
            out.append(f"<p>{html.escape(part.note)}</p>")
        out.append("<table><tr>" + "".join(f"<th>{html.escape(c)}</th>" for c in part.columns))
        for row in part.rows:
            out.append("<tr>" + "".join(f"<td>{_cell(v)}</td>" for v in row) + "</tr>")
        out.append("</table>")
    out.append("</body></html>\n")
    return "\n".join(out)


def write_report(report: Report, path: Path) -> Path:
    """Write the report's HTML to path."""
    path.write_text(render_html(report), encoding="utf-8")
    return path
