"""The bounds the issues set, checked against the figures of one `make bench` run."""

from __future__ import annotations

from typing import Any

BOUNDS: list[tuple[str, float, str]] = [
    # a share that must be at least x is bounded as its complement: 1 - share <= 1 - x
    (
        "long_session.openai.uncacheable_share",
        0.1,
        "30-turn session, OpenAI: input outside the previous request's prefix",
    ),
    ("long_session.anthropic.uncacheable_share", 0.1, "the same, Anthropic (cacheable share >= 0.9)"),
    ("long_session.anthropic.cost_ratio", 0.3, "30-turn session: modelled Anthropic input cost with caching / without"),
    (
        "long_session.openai.estimate_error",
        0.1,
        "the budget's estimate of a turn's first request vs its size, worst turn",
    ),
    ("long_session.anthropic.estimate_error", 0.1, "the same, Anthropic"),
    ("long_session.compacting.largest_request_over_budget", 1.0, "60 turns, 8k budget: largest request / budget"),
    ("long_session.compacting.failed_turns", 0, "60 turns, 8k budget: turns that failed"),
    ("long_session.compacting.key_number_missing", 0, "60 turns, 8k budget: turn 1's key number lost (1) or kept (0)"),
    ("kernel_turns.plain.ratio", 1.3, "%%agent --wait turn / raw httpx2 read of the same stream, same kernel"),
    ("kernel_turns.tool_call.ratio", 1.4, "the same with one tool call (2 model requests)"),
    (
        "kernel_turns.plain.bytes_per_answer_byte",
        5.0,
        "bytes to the frontend per byte of the answer (a turn with its live view)",
    ),
    ("kernel_turns.tool_call.bytes_per_answer_byte", 5.0, "the same with one tool call"),
    ("kernel_turns.plain.comm_open", 6, "widgets opened per turn (a turn with its live view)"),
    ("kernel_turns.tool_call.comm_open", 6, "widgets opened per turn with one tool call"),
    ("kernel_turns.plain.widget_updates_per_1000_tokens", 60, "widget updates per 1,000 streamed tokens"),
    ("kernel_turns.tool_call.widget_updates_per_1000_tokens", 60, "the same with one tool call"),
    ("paced_turns.plain.first_words_s", 0.03, "a paced answer's first frame to its first words on the client (s)"),
    ("paced_turns.plain.first_words_at_once_s", 0.03, "the same for a model that answers at once, at its pace (s)"),
    ("paced_turns.plain.bytes_per_answer_byte", 4.0, "bytes to the frontend per byte of a paced answer"),
    ("paced_turns.plain.cpu_ratio", 1.2, "kernel CPU of a paced turn / of the raw read of the same stream"),
    (
        "paced_turns.plain_without_extension.first_chars_s",
        0.05,
        "the first 24 characters without our lab extension (VS Code, Colab: the cell's text output) (s)",
    ),
    ("paced_turns.plain_without_extension.first_chars_at_once_s", 0.05, "the same, a model that answers at once (s)"),
    (
        "paced_turns.plain_without_extension.bytes_per_answer_byte",
        4.0,
        "bytes to the frontend per byte of a paced answer, without our lab extension",
    ),
    ("paced_turns.tool_call.cpu_ratio", 1.3, "the same with a call of a user @tool (sync), both responses paced"),
    ("server_turns.unpaced.ratio", 1.1, "a turn through the server's chat route / a turn in the kernel, full speed"),
    ("server_turns.paced.ratio", 1.15, "the same at a model's pace (think 0.3 s, then 250 chunks/s)"),
    ("server_turns.paced.first_words_s", 0.03, "a paced answer's first frame to its first words, server transport (s)"),
    ("server_turns.stop.server_max_s", 0.5, "Stop click to the end of a server-transport turn (s, worst of 5)"),
    ("saved_turn.bytes_per_answer_byte", 2.0, "a 1 MB answer's growth of the saved .ipynb (nbclient)"),
    ("user_cell_latency.added_s", 0.020, "`1+1` while a turn streams at full speed, minus idle (s)"),
    ("resume_10k.resume_s", 0.1, "%agent resume of a 10,000-message session (s)"),
    ("stop_latency.max_s", 0.5, "Stop click to the turn's end (s, worst of 5)"),
    ("describe_big_vs_small_frame.big_s", 0.25, "describe_dataframe on 10M pandas rows x 500 columns (s)"),
    ("describe_200m_dask.rss_growth_mb", 200, "kernel memory growth describing 200M Dask rows (MB)"),
    ("describe_200m_duckdb.rss_growth_mb", 200, "the same for DuckDB"),
    ("describe_200m_polars.rss_growth_mb", 200, "the same for a Polars LazyFrame"),
    ("describe_200m_spark.rss_growth_mb", 200, "the same for PySpark (local mode)"),
    ("describe_200m_dask.over_budget_s", 1.0, "Dask: seconds past AGENTIK_DESCRIBE_BUDGET_S"),
    ("describe_200m_duckdb.over_budget_s", 1.0, "DuckDB: seconds past the budget"),
    ("describe_200m_polars.over_budget_s", 1.0, "Polars: seconds past the budget"),
    ("describe_200m_spark.over_budget_s", 1.0, "Spark: seconds past the budget"),
    ("checkpoints.before_run_ms", 5.0, "rewind's checkpoint before a run_code, namespace of 1,000 names (ms)"),
    ("checkpoints.big_frame.rss_added_mb", 50, "RSS a turn changing a 2 GB DataFrame in place adds (MB)"),
    ("checkpoints.big_frame.mismatches", 0, "the rewound 2 GB frame differs from the frame before the turn"),
    ("checkpoints.release.kept_turns", 20, "checkpoints kept after 25 turns (the newest 20)"),
    ("checkpoints.release.bytes_over_budget", 0, "snapshot bytes kept past AGENTIK_REWIND_BUDGET"),
    ("checkpoints.release.released_silent", 0, "released turns that do not say they can no longer be rewound"),
    ("modes.auto.cards", 0, "the demo's analysis in Auto: approval cards for in-kernel work"),
    (
        "modes.auto.rewind_mismatches",
        0,
        "after the Auto turn, variables the Rewind did not give back and cells it left",
    ),
    ("modes.auto.cells_left", 0, "after the Auto turn, cells it inserted that the Rewind did not remove"),
    (
        "describe_dask_timeseries.rss_settled_mb",
        300,
        "kernel memory kept after describing dask.datasets.timeseries, 85 partitions of ~400 MB each (MB, #21)",
    ),
]
"""(dotted path into the results, the most the figure may be, what it measures)."""


def lookup(results: dict[str, Any], path: str) -> Any:
    value: Any = results
    for key in path.split("."):
        if not isinstance(value, dict) or key not in value:
            return None
        value = value[key]
    return value


def check(results: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per bound: the figure, the bound, pass/fail (None when the figure is missing,
    e.g. a benchmark skipped for a missing engine)."""
    rows = []
    for path, bound, what in BOUNDS:
        value = lookup(results, path)
        passed = None if not isinstance(value, (int, float)) else bool(value <= bound)
        rows.append({"figure": path, "value": value, "bound": bound, "pass": passed, "what": what})
    return rows
