#!/usr/bin/env python3
"""The wpds Grafana dashboard, as code: Grafana's foundation SDK (grafana-foundation-sdk,
pinned with its hash in deploy/monitoring/requirements.txt) builds it, and this prints it.

    python -m pip install --require-hashes -r deploy/monitoring/requirements.txt
    python deploy/monitoring/dashboard.py > deploy/monitoring/wpds.dashboard.json

wpds.dashboard.json is this script's output, checked in: change this file, regenerate, and
commit both (scripts/check-monitoring fails when they differ, and runs every panel's
queries against a real Prometheus scraping real servers: a panel nobody can fill is a
defect). The metrics are those of docs/operations.md, "Metrics".

The Prometheus data source is the dashboard variable `datasource`; `job` and `instance`
pick the servers (label values of wpds_build_info, which every server exports).
"""

import json
import sys

from grafana_foundation_sdk.builders import common as common_builders
from grafana_foundation_sdk.builders import dashboard as dash
from grafana_foundation_sdk.builders import prometheus, stat, statetimeline, table, timeseries
from grafana_foundation_sdk.cog.encoder import JSONEncoder
from grafana_foundation_sdk.models import common
from grafana_foundation_sdk.models.dashboard import (
    DataSourceRef,
    DataTransformerConfig,
    DynamicConfigValue,
    Threshold,
    ThresholdsMode,
    ValueMap,
    ValueMappingResult,
    VariableRefresh,
    VariableSort,
)

DATASOURCE = DataSourceRef(type_val="prometheus", uid="${datasource}")
# Every query's selector: the servers the variables pick.
SELECTOR = 'job=~"$job", instance=~"$instance"'


def sel(*matchers: str) -> str:
    """The label selector of the picked servers, with more matchers."""
    return "{" + ", ".join((SELECTOR, *matchers)) + "}"


def query(ref_id: str, expr: str, legend: str) -> prometheus.Dataquery:
    return (
        prometheus.Dataquery()
        .ref_id(ref_id)
        .datasource(DATASOURCE)
        .expr(expr)
        .legend_format(legend)
        .range()
    )


def legend_table(*calcs: str) -> common_builders.VizLegendOptions:
    return (
        common_builders.VizLegendOptions()
        .show_legend(True)
        .display_mode(common.LegendDisplayMode.TABLE)
        .placement(common.LegendPlacement.BOTTOM)
        .calcs(list(calcs) or ["mean", "max"])
    )


def graph(title: str, description: str, unit: str, *targets: prometheus.Dataquery, width: int = 12) -> timeseries.Panel:
    panel = (
        timeseries.Panel()
        .title(title)
        .description(description)
        .datasource(DATASOURCE)
        .unit(unit)
        .min(0)
        .fill_opacity(10)
        .legend(legend_table())
        .tooltip(common_builders.VizTooltipOptions().mode(common.TooltipDisplayMode.MULTI).sort(common.SortOrder.DESCENDING))
        .height(8)
        .span(width)
    )
    for target in targets:
        panel = panel.with_target(target)
    return panel


def rate(metric: str, *matchers: str) -> str:
    return f"rate({metric}{sel(*matchers)}[$__rate_interval])"


def quantile(q: str, histogram: str, by: str, *matchers: str) -> str:
    return f"histogram_quantile({q}, sum by ({by}, le) ({rate(histogram + '_bucket', *matchers)}))"


def batch_mean(histogram: str) -> str:
    return f"sum by (instance) ({rate(histogram + '_sum')}) / sum by (instance) ({rate(histogram + '_count')})"


def build() -> dash.Dashboard:
    requests = "wpds_http_requests_total"
    duration = "wpds_http_request_duration_seconds"
    dashboard = (
        dash.Dashboard("wpds")
        .uid("wpds-overview")
        .description("The Workspace Project-Data Service: answers, latency, the database pool, batching, admission and shutdown (docs/operations.md, Metrics).")
        .tags(["wpds"])
        .time("now-1h", "now")
        .refresh("30s")
        .timezone("browser")
        .tooltip(dash.dashboard.DashboardCursorSync.CROSSHAIR)
        .with_variable(
            dash.DatasourceVariable("datasource").label("Data source").type("prometheus")
        )
        .with_variable(
            dash.QueryVariable("job")
            .label("Job")
            .datasource(DATASOURCE)
            .query("label_values(wpds_build_info, job)")
            .refresh(VariableRefresh.ON_TIME_RANGE_CHANGED)
            .sort(VariableSort.ALPHABETICAL_ASC)
        )
        .with_variable(
            dash.QueryVariable("instance")
            .label("Instance")
            .datasource(DATASOURCE)
            .query('label_values(wpds_build_info{job=~"$job"}, instance)')
            .refresh(VariableRefresh.ON_TIME_RANGE_CHANGED)
            .sort(VariableSort.ALPHABETICAL_ASC)
            .multi(True)
            .include_all(True)
            .all_value(".*")
        )
        # ------------------------------------------------------------------ answers
        .with_row(dash.Row("Answers"))
        .with_panel(
            graph(
                "Requests per operation",
                "Answers a second, by the contract's operationId (`other`: probes, documents, unknown routes).",
                "reqps",
                query("A", f"sum by (operation_id) ({rate(requests)})", "{{operation_id}}"),
            )
        )
        .with_panel(
            graph(
                "Requests in flight",
                "Requests being served now.",
                "short",
                query("A", f"sum by (instance) (wpds_http_requests_in_flight{sel()})", "{{instance}}"),
            )
        )
        .with_panel(
            graph(
                "Client errors (4xx) per operation",
                "4xx answers a second, by operation and exact status (401 refused tokens, 404, 409 conflicts, 422, 429 refusals, …).",
                "reqps",
                query("A", "sum by (operation_id, code) (" + rate(requests, 'status_class="4xx"') + ")", "{{operation_id}} {{code}}"),
            )
        )
        .with_panel(
            graph(
                "Server errors (5xx) per operation",
                "5xx answers a second, by operation and exact status (503: see Unavailable by cause).",
                "reqps",
                query("A", "sum by (operation_id, code) (" + rate(requests, 'status_class="5xx"') + ")", "{{operation_id}} {{code}}"),
            )
        )
        .with_panel(
            graph(
                "Latency per operation (p50, p99)",
                "Time from a request's arrival to its answer's head, from the histogram, all statuses.",
                "s",
                query("A", quantile("0.5", duration, "operation_id"), "p50 {{operation_id}}"),
                query("B", quantile("0.99", duration, "operation_id"), "p99 {{operation_id}}"),
                width=24,
            )
        )
        # ------------------------------------------------------------------ database
        .with_row(dash.Row("Database"))
        .with_panel(
            graph(
                "Pool connections in use vs pool size",
                "The pool's open connections by state, and its size (WPDS_DB_POOL_SIZE): in use at the size means requests queue for a connection.",
                "short",
                query("A", f"sum by (instance, state) (wpds_db_pool_connections{sel()})", "{{instance}} {{state}}"),
                query("B", f"max by (instance) (wpds_db_pool_max_connections{sel()})", "{{instance}} pool size"),
            )
            .override_by_regexp(
                ".* pool size$",
                [
                    DynamicConfigValue(id_val="custom.fillOpacity", value=0),
                    DynamicConfigValue(id_val="custom.lineStyle", value={"fill": "dash", "dash": [10, 10]}),
                    DynamicConfigValue(id_val="color", value={"mode": "fixed", "fixedColor": "red"}),
                ],
            )
        )
        .with_panel(
            graph(
                "Pool wait (p50, p99)",
                "Time to get a pooled connection (wpds_db_pool_wait_seconds).",
                "s",
                query("A", quantile("0.5", "wpds_db_pool_wait_seconds", "instance"), "p50 {{instance}}"),
                query("B", quantile("0.99", "wpds_db_pool_wait_seconds", "instance"), "p99 {{instance}}"),
            )
        )
        .with_panel(
            graph(
                "Batch sizes (mean)",
                "Mean writes per batch the SQLite writer committed; on PostgreSQL, writes per batch of the time-log write's one statement and reads per batch of the authentication's lookups the cache did not answer. Each exists on its own engine only.",
                "short",
                query("A", batch_mean("wpds_sqlite_writer_batch_writes"), "{{instance}} SQLite writes per batch"),
                query("B", batch_mean("wpds_postgres_batch_writes"), "{{instance}} PostgreSQL writes per batch"),
                query("C", batch_mean("wpds_postgres_batch_reads"), "{{instance}} PostgreSQL reads per batch"),
            )
        )
        .with_panel(
            graph(
                "SQLite writer queue",
                "Writes waiting for the SQLite writer (the Writer backlog alert fires above 100).",
                "short",
                query("A", f"max by (instance) (wpds_sqlite_writer_queue_depth{sel()})", "{{instance}}"),
            )
        )
        # ------------------------------------------------------------------ admission and shutdown
        .with_row(dash.Row("Admission and shutdown"))
        .with_panel(
            graph(
                "Rate-limit refusals",
                "Requests refused with 429 a second, by what the limit counts: the user, or the client address (refreshes and requests without a usable token).",
                "reqps",
                query("A", f"sum by (subject) ({rate('wpds_rate_limit_refusals_total')})", "{{subject}}"),
            )
        )
        .with_panel(
            graph(
                "Unavailable (503) by cause",
                "503 answers a second: the database did not answer in time, the memory for bodies was taken, or the server was draining.",
                "reqps",
                query("A", f"sum by (cause) ({rate('wpds_unavailable_responses_total')})", "{{cause}}"),
            )
        )
        .with_panel(
            statetimeline.Panel()
            .title("Drain state")
            .description("1 while an instance drains after SIGTERM (WPDS_DRAIN_SECONDS: /readyz answers 503 so load balancers take it out), else 0.")
            .datasource(DATASOURCE)
            .with_target(query("A", f"max by (instance) (wpds_draining{sel()})", "{{instance}}"))
            .mappings(
                [
                    ValueMap(
                        options={
                            "0": ValueMappingResult(text="serving", color="green", index=0),
                            "1": ValueMappingResult(text="draining", color="orange", index=1),
                        }
                    )
                ]
            )
            .show_value(common.VisibilityMode.NEVER)
            .height(8)
            .span(12)
        )
        .with_panel(
            graph(
                "Readiness refused while draining",
                'Answers 503 a second because the instance was draining (wpds_unavailable_responses_total{cause="draining"}).',
                "reqps",
                query("A", "sum by (instance) (" + rate("wpds_unavailable_responses_total", 'cause="draining"') + ")", "{{instance}}"),
            )
        )
        .with_panel(
            graph(
                "Authentication cache",
                "Lookups of tokens and memberships a second, answered from memory (hit) or by the database (miss).",
                "reqps",
                query("A", f"sum by (result) ({rate('wpds_auth_cache_lookups_total')})", "{{result}}"),
                width=24,
            )
        )
        # ------------------------------------------------------------------ what runs
        .with_row(dash.Row("What runs"))
        .with_panel(
            table.Panel()
            .title("Build info")
            .description("The version, the contract's version and the database engine of each instance (wpds_build_info).")
            .datasource(DATASOURCE)
            .with_target(
                prometheus.Dataquery()
                .ref_id("A")
                .datasource(DATASOURCE)
                .expr(f"max by (instance, version, contract_version, engine) (wpds_build_info{sel()})")
                .format(prometheus.prometheus.PromQueryFormat.TABLE)
                .instant()
            )
            .with_transformation(
                DataTransformerConfig(
                    id_val="organize",
                    options={
                        "excludeByName": {"Time": True, "Value": True},
                        "indexByName": {"instance": 0, "engine": 1, "version": 2, "contract_version": 3},
                    },
                )
            )
            .height(6)
            .span(16)
        )
        .with_panel(
            stat.Panel()
            .title("Scraped")
            .description("Whether Prometheus scrapes each instance (the Instance down alert fires after a minute at 0).")
            .datasource(DATASOURCE)
            .with_target(query("A", f"up{sel()}", "{{instance}}"))
            .mappings(
                [
                    ValueMap(
                        options={
                            "0": ValueMappingResult(text="down", color="red", index=0),
                            "1": ValueMappingResult(text="up", color="green", index=1),
                        }
                    )
                ]
            )
            .thresholds(
                dash.ThresholdsConfig()
                .mode(ThresholdsMode.ABSOLUTE)
                .steps([Threshold(value=None, color="red"), Threshold(value=1, color="green")])
            )
            .height(6)
            .span(8)
        )
    )
    return dashboard


def numbered(board: dash.Dashboard):
    """The built dashboard, its panels numbered in order (stable ids for links and imports)."""
    built = board.build()
    for number, panel in enumerate(built.panels or [], start=1):
        panel.id_val = number
    return built


def main() -> int:
    text = json.dumps(numbered(build()), cls=JSONEncoder, indent=2, sort_keys=True, ensure_ascii=False)
    sys.stdout.write(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
