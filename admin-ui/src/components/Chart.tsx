// A topic's (or the tenant's) depth and rates over an hour, a day or a week, drawn with uPlot (about 50 KB, canvas,
// no inline styles). The chart takes the width its box is given and never widens the box itself: the box has
// `contain: inline-size`, or a chart in a table cell and the cell would enlarge each other without end.
import { useEffect, useRef } from "react";
import uPlot from "uplot";
import type { Schemas } from "../api/client";

type Point = Schemas["SeriesPointView"];

export function DepthChart({
  points,
  title,
  span = "the last hour",
}: {
  points: Point[];
  title: string;
  span?: string;
}) {
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
      points.map((p) => p.dead_letter_rate ?? 0),
    ];
    // Axes in the page's own text colour, so they read on the dark scheme too.
    const ink = getComputedStyle(element).color || "#444";
    const grid = { stroke: "rgba(128, 128, 128, 0.25)" };
    const axis = { stroke: ink, grid, ticks: grid };
    const width = Math.max(280, element.clientWidth);
    // Times in 24 hours, UTC, like every time the console shows: days and hours over a week, hours and minutes
    // below; ticks spaced for their labels, so a phone's width never crowds them together.
    const hours = uPlot.fmtDate("{HH}:{mm}");
    const days = uPlot.fmtDate("{MM}-{DD}");
    const dayHours = uPlot.fmtDate("{MM}-{DD} {HH}:{mm}");
    const utc = (ts: number) => uPlot.tzDate(new Date(ts * 1e3), "Etc/UTC");
    const timeLabels = (_: uPlot, splits: number[]) => {
      const spanSeconds = (splits[splits.length - 1] ?? 0) - (splits[0] ?? 0);
      return splits.map((ts) => {
        const d = utc(ts);
        if (spanSeconds <= 2 * 86400) return hours(d);
        return d.getHours() === 0 && d.getMinutes() === 0 ? days(d) : dayHours(d);
      });
    };
    const plot = new uPlot(
      {
        width,
        height: 220,
        title,
        tzDate: utc, // one zone everywhere: UTC
        scales: { x: { time: true }, rate: { auto: true } },
        // room right of the rate axis for its title, which uPlot draws outward from the axis (it was cut off)
        padding: [null, 14, null, null],
        // Each axis is given room for its tick labels and, apart from them, its title (labelSize and gap: the
        // title was drawn over the labels).
        axes: [
          {
            ...axis,
            label: "UTC",
            values: timeLabels,
            space: width < 500 ? 90 : 70,
            size: 36,
            labelSize: 18,
          },
          { ...axis, label: "messages", size: 56, labelSize: 18, labelGap: 4 },
          {
            ...axis,
            side: 1,
            scale: "rate",
            label: "per second",
            grid: { show: false },
            size: 56,
            labelSize: 18,
            labelGap: 4,
          },
        ],
        series: [
          {},
          { label: "pending", stroke: "#2f6fdf", spanGaps: false },
          { label: "processing", stroke: "#c98a00" },
          { label: "failed + expired", stroke: "#c0392b" },
          { label: "enqueued/s", stroke: "#2e9d5b", scale: "rate", dash: [4, 3] },
          { label: "acked/s", stroke: "#7b4bc4", scale: "rate", dash: [4, 3] },
          { label: "dead-lettered/s", stroke: "#e0457b", scale: "rate", dash: [2, 2] },
        ],
      },
      data,
      element,
    );
    let drawn = width;
    const resize = new ResizeObserver(() => {
      const next = Math.max(280, element.clientWidth);
      if (Math.abs(next - drawn) < 2) return; // our own redraw: nothing to do
      drawn = next;
      plot.setSize({ width: next, height: 220 });
    });
    resize.observe(element);
    return () => {
      resize.disconnect();
      plot.destroy();
    };
  }, [points, title]);
  return <div ref={ref} className="chart" role="img" aria-label={`${title}: depth and rates over ${span}`} />;
}
