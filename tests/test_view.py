"""`ecomrlve view`: one static HTML page of a finished run, read as text and in headless Chromium.

The run is `ecomrlve.testing.runs.scripted_run` (a store and run folder written by training's own
writers, with scripted held-out episodes: no model, seconds); `tests/test_train_cli.py` checks
that a real tiny `ecomrlve train` leaves the page too.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ecomrlve.cli import app
from ecomrlve.testing.runs import BLUFF, scripted_run

CHROMIUM = Path("/usr/bin/chromium")
# no GPU, no network, nothing the first start of a profile would fetch
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> tuple[Path, Path]:
    return scripted_run(tmp_path_factory.mktemp("view"))


@pytest.fixture(scope="module")
def page(run) -> tuple[Path, str, str]:
    """(report path, its HTML, the command's output) of `ecomrlve view RUN` (store found
    above the run folder, as `make run` lays them out)."""
    _, folder = run
    result = CliRunner().invoke(app, ["view", str(folder)])
    assert result.exit_code == 0, result.output
    path = folder / "report.html"
    return path, path.read_text(encoding="utf-8"), result.output


def _all_row(html: str) -> str:
    (row,) = re.findall(r'<tr class="all"><td>all</td>.*?</tr>', html, flags=re.S)
    return row


def test_the_page_opens_with_the_held_out_table_of_the_closing_summary(run, page) -> None:
    _, folder = run
    path, html, output = page
    assert f"report     {path}" in output
    assert 'id="held-out-table"' in html
    summary = json.loads((folder / "summary.json").read_text())
    row = _all_row(html)
    for stage in ("base", "sft", "final"):  # the closing table's numbers, in stage order
        assert f"{summary['held_out'][stage]['pass_at_1']:.2f} " in row
    assert row.index("0.00 ") < row.index("0.56 ") < row.index("0.94 ")
    for scenario in ("cancel", "order_status", "product_discovery", "return"):
        assert f"<td>{scenario}</td>" in html
    assert "SFT − base" in html and "DAPO − SFT" in html


def test_the_page_carries_curves_and_task_mix_inline(page) -> None:
    _, html, _ = page
    assert html.count('src="data:image/png;base64,') == 4  # sft loss, reward, success, frontier
    assert 'id="mix-difficulty"' in html and 'id="mix-min_steps"' in html
    # self-contained: every src/href is inline or a link within the page
    outside = re.findall(r'(?:src|href)="(?!data:|#)([^"]*)"', html)
    assert not outside, outside
    assert "http://" not in html and "https://" not in html


def test_a_failed_episode_shows_its_turns_verdict_and_the_clause_that_failed(page) -> None:
    _, html, _ = page
    assert 'class="episode failed"' in html and 'class="episode passed"' in html
    assert (
        '<mark class="failed-reason">claims: reports a cancel that was not done: '
        "&#39;I have cancelled your order and refunded you in full.&#39;</mark>"
    ) in html
    assert '<mark class="failed-clause">I have cancelled your order and refunded you in full.' in (
        html
    )
    assert '<mark class="failed-reason">goal: order O1001 was not cancelled</mark>' in html
    assert "reward component" in html and "<td>success</td>" in html
    # a passed episode replayed: its tool calls and their results
    assert 'class="call-ok"><code>cancel_order(' in html
    assert "tool result: cancel_order" in html
    assert "the replay gives" not in html  # every replay matched its stored row


def test_text_from_the_model_is_escaped(page) -> None:
    _, html, _ = page
    assert "<script>alert" not in html and "<b>thanks</b>" not in html
    assert "&lt;script&gt;alert(&#34;bluff&#34;)&lt;/script&gt; &amp; &lt;b&gt;thanks" in html
    assert html.count("<script>") == 1  # the page's own filter script


def test_episodes_are_capped_per_stage(run, tmp_path) -> None:
    _, folder = run
    out = tmp_path / "small.html"
    result = CliRunner().invoke(app, ["view", str(folder), "--output", str(out), "--episodes", "2"])
    assert result.exit_code == 0, result.output
    html = out.read_text(encoding="utf-8")
    assert html.count('<details class="episode') == 6  # 2 per stage
    assert "6 of 54 held-out episodes" in html
    assert not (folder / "small.html").exists()


@pytest.mark.parametrize(
    ("make_args", "message"),
    [
        (lambda run, tmp: [str(tmp)], "is not a finished training run (no summary.json"),
        (lambda run, tmp: [str(tmp / "nope")], "is not a folder"),
        (lambda run, tmp: [str(run[1]), "--data", str(tmp)], "no store at"),
        (lambda run, tmp: [str(run[1]), "--episodes", "-1"], "--episodes must be >= 0"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(run, tmp_path, make_args, message) -> None:
    result = CliRunner().invoke(app, ["view", *make_args(run, tmp_path)])
    assert result.exit_code == 2
    assert message in result.output and len(result.output.strip().splitlines()) == 1


def test_a_store_without_the_run_is_refused(run, tmp_path) -> None:
    from ecomrlve import store

    other = tmp_path / "other"
    with store.writer(other):  # an empty store
        pass
    result = CliRunner().invoke(app, ["view", str(run[1]), "--data", str(other)])
    assert result.exit_code == 2
    assert "has no held-out episodes in the store" in result.output
    assert "pass --data" in result.output


@pytest.mark.skipif(
    not CHROMIUM.exists(),
    reason="/usr/bin/chromium is absent (Debian's `chromium`; .ci/run installs it)",
)
def test_the_page_in_headless_chromium(page, tmp_path) -> None:
    """The acceptance check: Chromium opens the file, finds the table and a failed episode's
    highlighted reason, filters to failures, and logs no console error."""
    from playwright.sync_api import sync_playwright

    path, _, _ = page
    errors: list[str] = []
    shot = tmp_path / "report.png"
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            tab = browser.new_page(viewport={"width": 1200, "height": 900})
            tab.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            tab.on("pageerror", lambda err: errors.append(str(err)))
            tab.goto(path.as_uri())
            table = tab.locator("#held-out-table")
            assert table.is_visible()
            assert "DAPO" in table.inner_text()
            tab.check("#failed-only")
            assert tab.locator("details.episode.passed").first.is_hidden()
            shown = int(tab.locator("#shown-count").inner_text())
            assert shown == tab.locator("details.episode.failed").count() > 0
            failed = tab.locator("details.episode.failed").first
            failed.locator("> summary").click()
            reason = failed.locator("mark.failed-reason").first
            assert reason.is_visible()
            assert reason.inner_text().startswith(("goal:", "claims:"))
            assert failed.locator("mark.failed-clause").first.is_visible()
            assert BLUFF.split(". ")[1] in failed.locator("blockquote.final").inner_text()
            tab.screenshot(path=str(shot), full_page=True)
        finally:
            browser.close()
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert not errors, errors


def test_training_ends_with_the_report_line_or_one_warning(run, tmp_path, capsys) -> None:
    from ecomrlve.cli.train import print_report

    data, folder = run
    print_report(folder, data)
    assert f"report     {folder / 'report.html'}" in capsys.readouterr().out
    print_report(tmp_path, data)  # not a finished run: the run stands, the page is skipped
    out = capsys.readouterr().out
    assert out.startswith("report     not written:") and len(out.strip().splitlines()) == 1


def test_the_failed_clause_is_the_quote_of_a_claims_violation() -> None:
    from ecomrlve.train.view import failed_clauses, marked_spans

    violations = [
        "goal: order O1 was not cancelled",
        "claims: names 'Red Mug', not the product acted on: 'I sent the Red   Mug back…'",
        'claims: reports a refund that was not done: "it\'s refunded"',
    ]
    clauses = failed_clauses(violations)
    assert clauses == ["I sent the Red   Mug back", "it's refunded"]
    text = "Hello. I sent the Red\nMug back today, and it's refunded."
    assert [piece for piece, failed in marked_spans(text, clauses) if failed] == [
        "I sent the Red\nMug back",
        "it's refunded",
    ]
    assert "".join(piece for piece, _ in marked_spans(text, clauses)) == text


def test_rescore_replays_every_episode_and_counts_flipped_verdicts(tmp_path) -> None:
    """`view RUN --rescore`: under the verifier that judged them nothing flips; a stored
    verdict that today's verifier does not give (as after a verifier change) is counted."""
    from ecomrlve import store
    from ecomrlve.train.view import rescore

    data, folder = scripted_run(tmp_path)
    table = rescore(folder)
    assert table["stage"].to_list() == ["base", "sft", "final"]
    assert table["replayed"].to_list() == [18, 18, 18]  # 9 tasks x 2 samples
    assert table["now_pass"].to_list() == table["now_fail"].to_list() == [0, 0, 0]
    assert table["stored_pass_at_1"].to_list() == table["now_pass_at_1"].to_list()

    with store.writer(data) as con:  # one SFT episode stored as failed that the env passes
        con.execute(
            "UPDATE eval_episodes SET success = false WHERE rowid = (SELECT min(rowid) "
            "FROM eval_episodes WHERE stage = 'sft' AND success)"
        )
    flipped = rescore(folder).filter(stage="sft").row(0, named=True)
    assert (flipped["now_pass"], flipped["now_fail"]) == (1, 0)

    result = CliRunner().invoke(app, ["view", str(folder), "--rescore"])
    assert result.exit_code == 0, result.output
    assert "verdicts replayed" in result.output and not (folder / "report.html").exists()
