"""The calibration report as a plain-text table (what `vigil aiops calibrate-risk` prints)."""

from __future__ import annotations

from vigil.aiops.risk.calibrate_eval import Calibration


def _days(value: float | None) -> str:
    return "-" if value is None else f"{value:.0f}"


def render_table(reports: list[Calibration]) -> str:
    """One row per kind and false-alarm target, figures on the held-out half."""
    header = ("kind", "held-out units", "failing", "with precursor", "AUC", "target FA", "held-out FA",
              "detection", "chance", "lead median (d)", "lead p10 (d)")
    rows = [header]
    for r in reports:
        for p in r.points:
            rows.append((r.kind, str(r.held_out_units), str(r.held_out_failing), f"{r.detectable_share:.1%}",
                         f"{r.roc_auc:.3f}", f"{p.target_false_alarm_rate:.1%}", f"{p.held_out_false_alarm_rate:.3%}",
                         f"{p.detection_rate:.1%}", f"{1 - (1 - p.target_false_alarm_rate) ** r.horizon_days:.1%}",
                         _days(p.median_lead_days), _days(p.p10_lead_days)))
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    lines = ["  ".join(cell.ljust(w) if i == 0 else cell.rjust(w) for i, (cell, w) in enumerate(zip(row, widths))).rstrip()
             for row in rows]
    notes = [
        "",
        "FA: share of healthy units' days with an alarm (threshold set on the training half);",
        "detection: failing units warned 1..horizon days ahead (horizon: "
        + ", ".join(f"{r.kind} {r.horizon_days} d" for r in reports) + ");",
        "chance: the detection of a random score alarming on the same share of days;",
        "'with precursor' caps detection: the rest fail without any warning signal.",
    ]
    return "\n".join(lines + notes) + "\n"
