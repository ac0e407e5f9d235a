"""The gateway's Prometheus metrics: requests by route, model and status, latency, in-flight, switches."""

from __future__ import annotations

from collections import Counter, defaultdict

from ai_platform.serving.state import ModelState

BUCKETS = (0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)


class Metrics:
    def __init__(self) -> None:
        self.requests: Counter[tuple[str, str, int]] = Counter()
        self.latency: dict[str, list[int]] = defaultdict(lambda: [0] * (len(BUCKETS) + 1))
        self.latency_sum: defaultdict[str, float] = defaultdict(float)
        self.in_flight: Counter[str] = Counter()  # by upstream base_url
        self.switches = 0

    def observe(self, route: str, model: str, status: int, seconds: float) -> None:
        self.requests[(route, model, status)] += 1
        bucket = next((i for i, b in enumerate(BUCKETS) if seconds <= b), len(BUCKETS))
        self.latency[route][bucket] += 1
        self.latency_sum[route] += seconds

    def render(self, states: dict[str, ModelState]) -> str:
        lines = [
            "# HELP ai_platform_gateway_requests_total Requests by route, model and status.",
            "# TYPE ai_platform_gateway_requests_total counter",
        ]
        lines += [
            f'ai_platform_gateway_requests_total{{route="{r}",model="{m}",status="{s}"}} {n}'
            for (r, m, s), n in sorted(self.requests.items())
        ]
        lines += [
            "# HELP ai_platform_gateway_request_seconds Request latency.",
            "# TYPE ai_platform_gateway_request_seconds histogram",
        ]
        for route, counts in sorted(self.latency.items()):
            total = 0
            for bound, count in zip([*map(str, BUCKETS), "+Inf"], counts, strict=True):
                total += count
                lines.append(f'ai_platform_gateway_request_seconds_bucket{{route="{route}",le="{bound}"}} {total}')
            lines.append(f'ai_platform_gateway_request_seconds_sum{{route="{route}"}} {self.latency_sum[route]:.6f}')
            lines.append(f'ai_platform_gateway_request_seconds_count{{route="{route}"}} {total}')
        lines += ["# TYPE ai_platform_gateway_in_flight gauge"]
        lines += [f'ai_platform_gateway_in_flight{{upstream="{u}"}} {n}' for u, n in sorted(self.in_flight.items())]
        lines += ["# TYPE ai_platform_gateway_live_color gauge"]
        lines += [
            f'ai_platform_gateway_live_color{{model="{m}",color="{s.live.color}",image="{s.live.image}"}} 1'
            for m, s in sorted(states.items())
            if s.live
        ]
        lines += [
            "# TYPE ai_platform_gateway_switches_total counter",
            f"ai_platform_gateway_switches_total {self.switches}",
        ]
        return "\n".join(lines) + "\n"
