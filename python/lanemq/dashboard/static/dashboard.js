// lanemq dashboard: the per-minute charts, confirmations of destructive actions, the live
// counts, and the optional auto-refresh. Plain JavaScript, served by the app: no build step, no CDN.
"use strict";

const SVG = "http://www.w3.org/2000/svg";
const MINUTE = 60000;

function element(name, attributes, parent) {
  const node = document.createElementNS(SVG, name);
  for (const [key, value] of Object.entries(attributes)) node.setAttribute(key, String(value));
  if (parent) parent.appendChild(node);
  return node;
}

// The per-minute counts of the last `minutes` minutes, oldest first, from a series whose
// `data` is newest first and whose first point is the minute `newest` (epoch ms).
function lastMinutes(series, minutes, nowMinute) {
  const values = [];
  for (let i = minutes - 1; i >= 0; i--) {
    const minute = nowMinute - i * MINUTE;
    const index = series.newest === null ? -1 : Math.round((series.newest - minute) / MINUTE);
    values.push(index >= 0 && index < series.data.length ? series.data[index] : 0);
  }
  return values;
}

// Draws a chart into `holder` from its data-chart attribute: {"minutes": N, "now": ms,
// "completed": {"data": [...], "newest": ms|null}, "failed": {...}} (data newest first, from
// the minute `newest`). A bar per minute: the failed jobs at its foot, the completed above.
function drawChart(holder) {
  const spec = JSON.parse(holder.dataset.chart);
  const small = holder.classList.contains("spark");
  const minutes = spec.minutes;
  const nowMinute = Math.floor(spec.now / MINUTE) * MINUTE;
  const completed = lastMinutes(spec.completed, minutes, nowMinute);
  const failed = lastMinutes(spec.failed, minutes, nowMinute);
  // Drawn at the holder's own size, so the labels keep their size on any screen.
  const width = small ? 150 : Math.max(holder.clientWidth, 300), height = small ? 30 : 150;
  const left = small ? 0 : 34, bottom = small ? 0 : 16, top = small ? 2 : 8;
  const most = Math.max(1, ...completed.map((value, i) => value + failed[i]));
  const svg = element("svg", { viewBox: `0 0 ${width} ${height}`, width, height });
  const title = element("title", {}, svg);
  const sum = (values) => values.reduce((a, b) => a + b, 0);
  title.textContent = `last ${minutes} min: ${sum(completed)} completed, ${sum(failed)} failed`;
  const step = (width - left) / minutes;
  const scale = (height - bottom - top) / most;
  const base = height - bottom;
  for (let i = 0; i < minutes; i++) {
    const at = new Date(nowMinute - (minutes - 1 - i) * MINUTE).toISOString().slice(11, 16);
    let foot = base;
    for (const [kind, value] of [["failed", failed[i]], ["completed", completed[i]]]) {
      if (!value) continue;
      const bar = element("rect", {
        class: `bar-${kind}`,
        x: left + i * step + step * 0.1,
        width: Math.max(step * 0.8, 1),
        y: foot - value * scale,
        height: value * scale,
      }, svg);
      element("title", {}, bar).textContent = `${at} UTC: ${value} ${kind}`;
      foot -= value * scale;
    }
  }
  if (!small) {
    element("line", { class: "axis", x1: left, x2: width, y1: base, y2: base }, svg);
    const label = (text, x, y, anchor) => {
      element("text", { x, y, "text-anchor": anchor }, svg).textContent = text;
    };
    label(String(most), left - 4, top + 8, "end");
    label("0", left - 4, base, "end");
    label(`-${minutes} min`, left, height - 3, "start");
    label("now", width, height - 3, "end");
  }
  holder.replaceChildren(svg);
}

function confirmations() {
  for (const form of document.querySelectorAll("form[data-confirm]")) {
    form.addEventListener("submit", (event) => {
      if (!window.confirm(form.dataset.confirm)) event.preventDefault();
    });
  }
}

// Reloads the page every 5 s while the box is ticked (remembered across pages), unless the
// user is typing in a field.
function autoRefresh() {
  const box = document.getElementById("auto-refresh");
  if (!box) return;
  box.checked = window.localStorage.getItem("lanemq-refresh") === "on";
  box.addEventListener("change", () => {
    window.localStorage.setItem("lanemq-refresh", box.checked ? "on" : "off");
  });
  window.setInterval(() => {
    const typing = document.activeElement && ["INPUT", "SELECT", "TEXTAREA"].includes(document.activeElement.tagName)
      && document.activeElement !== box;
    if (box.checked && !typing) window.location.reload();
  }, 5000);
}

// Live counts: a table marked data-live-counts (the overview's, a queue page's) reads its
// URL (GET /api/counts, JSON) every LIVE_MS and puts the new numbers in place, so the counts
// move without reloading the page. Nothing is asked while the tab is hidden (a hidden tab
// polling every few seconds is load on the backend for no one); it catches up when shown.
const LIVE_MS = 3000;

function liveCounts() {
  const tables = document.querySelectorAll("[data-live-counts]");
  if (!tables.length) return;
  let busy = false;
  const update = (table, queues) => {
    for (const row of table.querySelectorAll("[data-queue]")) {
      // (matched by value, not by a CSS selector: a queue's name may hold any character)
      const queue = queues.find((q) => q.name === row.dataset.queue);
      if (!queue) continue;
      for (const link of row.querySelectorAll("[data-state]")) {
        const value = queue.counts[link.dataset.state];
        if (value !== undefined && link.textContent !== String(value)) link.textContent = String(value);
      }
      const workers = row.querySelector("[data-workers]");
      if (workers) workers.textContent = String(queue.workers);
    }
  };
  const poll = async () => {
    if (busy || document.hidden) return;
    busy = true;
    try {
      for (const table of tables) {
        const response = await fetch(table.dataset.liveCounts, {
          headers: { accept: "application/json" }, cache: "no-store", credentials: "same-origin",
        });
        // (signed out, or the queue is gone: keep the numbers shown, try again later)
        if (response.ok) update(table, (await response.json()).queues);
      }
    } catch (error) {
      // The server is down or restarting: the next tick tries again.
    } finally {
      busy = false;
    }
  };
  window.setInterval(poll, LIVE_MS);
  document.addEventListener("visibilitychange", () => { if (!document.hidden) poll(); });
}

// The notice of an action (?done=) is shown once: a reload should not repeat it.
function forgetNotice() {
  const url = new URL(window.location.href);
  if (!url.searchParams.has("done")) return;
  url.searchParams.delete("done");
  url.searchParams.delete("n");
  window.history.replaceState(null, "", url.pathname + url.search);
}

document.addEventListener("DOMContentLoaded", () => {
  forgetNotice();
  for (const holder of document.querySelectorAll("[data-chart]")) drawChart(holder);
  confirmations();
  autoRefresh();
  liveCounts();
});
