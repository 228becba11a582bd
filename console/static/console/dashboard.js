/*
 * The dashboard's charts (console/templates/console/dashboard.html), drawn with Chart.js from npm (served from
 * node_modules by staticfiles, like cytoscape). The figures come from the JSON endpoint in data-url.
 *
 * CSP: Chart.js draws on <canvas> and injects no <style> element; the sizes it sets go through the CSSOM
 * (element.style), which `style-src 'self'` allows. Its tooltips are drawn on the canvas, not as HTML.
 * Labels use the page's own font stack, so Chinese entity names render with Noto Sans CJK / PingFang.
 */
(function () {
  "use strict";
  // Words come from Django's JavaScript catalogue (base.html loads it first); without it, English.
  const gettext = window.gettext || ((text) => text);
  const ngettext = window.ngettext || ((one, many, n) => (n === 1 ? one : many));
  const interpolate = window.interpolate || ((text, values) => text.replace(/%\((\w+)\)s/g, (_, key) => values[key]));

  const root = document.getElementById("dashboard-charts");
  if (!root || typeof window.Chart !== "function") {
    return;
  }
  const Chart = window.Chart;
  const status = document.getElementById("charts-status");
  const css = getComputedStyle(document.body);
  Chart.defaults.font.family = css.fontFamily;
  Chart.defaults.color = css.color;
  Chart.defaults.maintainAspectRatio = false;

  const BLUE = "#3056d3";
  const GREEN = "#15803d";
  const AMBER = "#d97706";
  const RED = "#b91c1c";
  const charts = {};
  window.mnemoCharts = charts; // the browser test reads the drawn charts here

  function draw(name, config) {
    if (charts[name]) {
      charts[name].data = config.data;
      charts[name].update();
      return;
    }
    charts[name] = new Chart(document.getElementById(`chart-${name}`), config);
  }

  function render(data) {
    draw("activity", {
      type: "line",
      data: {
        labels: data.days.map((day) => day.slice(5)),
        datasets: [
          { label: gettext("Added"), data: data.added, borderColor: BLUE, backgroundColor: BLUE, tension: 0.2 },
          { label: gettext("Retrieved"), data: data.retrieved, borderColor: GREEN, backgroundColor: GREEN, tension: 0.2 },
        ],
      },
      options: { scales: { y: { beginAtZero: true, ticks: { precision: 0 } } } },
    });
    draw("importance", {
      type: "bar",
      data: {
        labels: data.importance.labels,
        datasets: [{ label: gettext("Memories"), data: data.importance.counts, backgroundColor: BLUE }],
      },
      options: { plugins: { legend: { display: false } }, scales: { y: { beginAtZero: true, ticks: { precision: 0 } } } },
    });
    draw("entities", {
      type: "bar",
      data: {
        labels: data.top_entities.map((entity) => entity.name),
        datasets: [{ label: gettext("Mentions"), data: data.top_entities.map((e) => e.frequency), backgroundColor: GREEN }],
      },
      options: {
        indexAxis: "y",
        plugins: { legend: { display: false } },
        scales: { x: { beginAtZero: true, ticks: { precision: 0 } } },
      },
    });
    const tables = data.mirrors.map((row) => row.table);
    draw("health", {
      type: "bar",
      data: {
        labels: [gettext("documents"), ...tables],
        datasets: [
          {
            label: gettext("Queued / pending"),
            data: [data.queue.queued, ...data.mirrors.map((row) => row.pending)],
            backgroundColor: AMBER,
          },
          { label: gettext("Failed"), data: [data.queue.failed, ...data.mirrors.map((row) => row.failed)], backgroundColor: RED },
        ],
      },
      options: { scales: { y: { beginAtZero: true, ticks: { precision: 0 } } } },
    });
    const pending = data.mirrors.reduce((sum, row) => sum + row.pending, 0);
    const failed = data.mirrors.reduce((sum, row) => sum + row.failed, 0);
    status.textContent =
      pending || failed
        ? interpolate(gettext("Mirrors: %(pending)s pending, %(failed)s failed. Resync sends them again."), { pending, failed }, true)
        : gettext("Every row is mirrored.");
    root.dataset.state = "ready";
  }

  async function load() {
    root.dataset.state = "loading";
    try {
      const response = await fetch(root.dataset.url, { headers: { Accept: "application/json" }, credentials: "same-origin" });
      if (!response.ok) {
        throw new Error(interpolate(gettext("The charts could not be loaded (%(status)s)."), { status: response.status }, true));
      }
      render(await response.json());
    } catch (error) {
      root.dataset.state = "error";
      status.textContent = error.message;
    }
  }

  document.body.addEventListener("mirrors-resynced", load);
  load();
})();
