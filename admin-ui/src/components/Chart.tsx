// A topic's depth and rates over the last hour, drawn with uPlot (about 50 KB, canvas, no inline styles).
import { useEffect, useRef } from "react";
import uPlot from "uplot";
import type { Schemas } from "../api/client";

type Point = Schemas["SeriesPointView"];

export function DepthChart({ points, title }: { points: Point[]; title: string }) {
  const ref = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const element = ref.current;
    if (!element) return;
    const times = points.map((p) => Date.parse(p.at) / 1000);
    const data: uPlot.AlignedData = [
      times,
      points.map((p) => p.pending ?? null),
      points.map((p) => p.processing ?? null),
      points.map((p) => (p.failed === null || p.failed === undefined ? null : p.failed + (p.expired ?? 0))),
      points.map((p) => p.enqueue_rate),
      points.map((p) => p.ack_rate),
    ];
    const width = Math.max(280, element.clientWidth);
    const plot = new uPlot(
      {
        width,
        height: 220,
        title,
        scales: { x: { time: true }, rate: { auto: true } },
        axes: [
          {},
          { label: "messages" },
          { side: 1, scale: "rate", label: "per second", grid: { show: false } },
        ],
        series: [
          {},
          { label: "pending", stroke: "#2f6fdf", spanGaps: false },
          { label: "processing", stroke: "#c98a00" },
          { label: "failed + expired", stroke: "#c0392b" },
          { label: "enqueued/s", stroke: "#2e9d5b", scale: "rate", dash: [4, 3] },
          { label: "acked/s", stroke: "#7b4bc4", scale: "rate", dash: [4, 3] },
        ],
      },
      data,
      element,
    );
    const resize = new ResizeObserver(() =>
      plot.setSize({ width: Math.max(280, element.clientWidth), height: 220 }),
    );
    resize.observe(element);
    return () => {
      resize.disconnect();
      plot.destroy();
    };
  }, [points, title]);
  return (
    <div ref={ref} className="chart" role="img" aria-label={`${title}: depth and rates over the last hour`} />
  );
}
