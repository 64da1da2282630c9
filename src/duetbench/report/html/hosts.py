"""The hosts the runs executed on, and the settings and notes of the report."""

from __future__ import annotations

from typing import Any

from ...analysis.evaluate import Evaluation
from ...dataset import Dataset
from .. import formatting as fmt
from ..tables import Column, Table, dataset_notes
from .page import Page, esc, html_table

HOST_FIELDS = (
    ("cpu_model", "CPU"),
    ("cores", "cores"),
    ("memory_bytes", "memory"),
    ("kernel", "kernel"),
    ("os", "OS"),
    ("virtualization", "virtualization"),
    ("cpu_governor", "governor"),
    ("python", "Python"),
    ("container_engines", "container engines"),
)


def _host_value(k: str, v: Any) -> str:
    if v is None or v == "":
        return "-"
    if k == "memory_bytes" and fmt.num(v) is not None:
        return f"{float(v) / 2**30:.1f} GiB"
    if isinstance(v, list | tuple):
        return ", ".join(map(str, v)) or "-"
    return str(v)


def _host_table(infos: dict[str, dict[str, Any]]) -> Table:
    hosts = sorted(infos)
    rows = tuple(
        {"field": label, **{f"h{i}": _host_value(k, infos[h].get(k)) for i, h in enumerate(hosts)}}
        for k, label in HOST_FIELDS
    )
    columns = (Column("field", ""), *(Column(f"h{i}", h) for i, h in enumerate(hosts)))
    return Table(name="hosts", title="Host configuration", columns=columns, rows=rows)


def hosts_section(page: Page, ev: Evaluation, dataset: Dataset) -> None:
    page.section("hosts", "Host configuration", "The machines the runs executed on, as detected.")
    infos: dict[str, dict[str, Any]] = {h: dict(d) for h, d in dataset.hosts.items()}
    if not infos and not ev.hosts.empty:
        for r in ev.hosts.to_dict("records"):
            infos[str(r["host"])] = {
                k.removeprefix("host_"): v for k, v in r.items() if k.startswith("host_")
            }
    if not infos:
        page.add('<p class="note">No host information in this table.</p>')
        page.end_section()
        return
    page.add(html_table(_host_table(infos)))
    for h, info in sorted(infos.items()):
        arts = info.get("artifacts") or {}
        if not isinstance(arts, dict) or not arts:
            continue
        blocks = []
        for name, res in arts.items():
            text = res.get("stdout", "") if isinstance(res, dict) else str(res)
            text = text if len(text) <= 6000 else text[:6000] + "\n..."
            blocks.append(f"<h4>{esc(name)}</h4><pre>{esc(text)}</pre>")
        page.add(f"<details><summary>artifacts of {esc(h)}</summary>{''.join(blocks)}</details>")
    page.end_section()


def settings_section(page: Page, ev: Evaluation, dataset: Dataset) -> None:
    page.section("settings", "Settings and notes")
    rows = tuple(
        {"setting": k, "value": ", ".join(f"{x:g}" for x in v) if isinstance(v, list) else v}
        for k, v in ev.settings.settings().items()
    )
    columns = (Column("setting", "setting"), Column("value", "value"))
    page.add(html_table(Table(name="settings", title="Settings", columns=columns, rows=rows)))
    notes = dataset_notes(dataset)
    for n in notes:
        if n.kind == "excluded":
            page.add(f'<p class="note">{esc(n.text)}.</p>')
    problems = [n.text for n in notes if n.kind == "problem"] + list(ev.problems)
    if problems:
        page.add(
            '<ul class="problems">' + "".join(f"<li>{esc(p)}</li>" for p in problems) + "</ul>"
        )
    page.end_section()
