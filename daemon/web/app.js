// dtraind's dashboard: the jobs, one job, the sweeps, one sweep, the nodes. Routes are the URL's
// hash (#/, #/job/7, #/sweeps, #/sweep/3, #/nodes). Each page takes its data from one server-sent
// event stream (/api/stream), which the daemon feeds from its store as things change: no polling.
// Everything the page shows of jobs and logs goes in as text (textContent), never as HTML.
"use strict";

const view = document.getElementById("view");
const connection = document.getElementById("connection");
let stream = null;
let charts = [];

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (key === "class") node.className = value;
    else node.setAttribute(key, value);
  }
  for (const child of children) {
    node.append(child instanceof Node ? child : document.createTextNode(child == null ? "" : String(child)));
  }
  return node;
}

function table(headers, rows) {
  const head = el("tr", {}, ...headers.map(h => el("th", h.num ? { class: "num" } : {}, h.label || h)));
  return el("table", {}, el("thead", {}, head), el("tbody", {}, ...rows));
}

function age(unixSeconds) {
  if (!unixSeconds) return "-";
  const s = Math.max(0, Date.now() / 1000 - unixSeconds);
  if (s < 60) return Math.round(s) + "s ago";
  if (s < 3600) return Math.round(s / 60) + "m ago";
  if (s < 86400) return Math.round(s / 3600) + "h ago";
  return Math.round(s / 86400) + "d ago";
}

// Local time as the CLI writes it, whatever the browser's locale: "2026-11-30 14:03:12".
function when(unixSeconds) {
  if (!unixSeconds) return "-";
  const d = new Date(unixSeconds * 1000);
  const two = n => String(n).padStart(2, "0");
  return d.getFullYear() + "-" + two(d.getMonth() + 1) + "-" + two(d.getDate()) + " " +
    two(d.getHours()) + ":" + two(d.getMinutes()) + ":" + two(d.getSeconds());
}

// "12s", "5m12s", "3h05m", as the CLI's ETA.
function duration(seconds) {
  if (seconds == null || !(seconds >= 0)) return "--";
  const s = Math.round(seconds);
  const two = n => String(n).padStart(2, "0");
  if (s >= 3600) return Math.floor(s / 3600) + "h" + two(Math.floor(s / 60) % 60) + "m";
  if (s >= 60) return Math.floor(s / 60) + "m" + two(s % 60) + "s";
  return s + "s";
}

// A metric's value as the daemon sends it: a number, null for NaN, "inf" or "-inf". Plain
// digits, no grouping, whatever the locale (as the CLI writes them).
function number(value, digits) {
  if (value == null) return "-";
  if (typeof value === "string") return value;
  return String(Number(Number(value).toFixed(digits ?? 4)));
}

// The metrics that count one worker's last log_every steps, not the run (core/train/metrics.h).
const windowCounters = [
  'compute_seconds', 'comm_seconds', 'wait_seconds', 'bytes_sent', 'pipeline_idle_seconds',
  'activation_send_seconds', 'activation_bytes', 'compression_seconds', 'wire_bytes',
  'exposed_comm_seconds'
];

// "step 120/480 (25%), 2.5 steps/s, ETA 2m24s" (the pace and ETA while it runs).
function stepText(j) {
  let text = "step " + j.step;
  if (j.total_steps) {
    text += "/" + j.total_steps + " (" + Math.floor(Math.min(1, j.step / j.total_steps) * 100) + "%)";
  }
  if (j.state === "running" && j.steps_per_sec != null) text += ", " + number(j.steps_per_sec, 2) + " steps/s";
  if (j.state === "running" && j.eta_seconds != null) text += ", ETA " + duration(j.eta_seconds);
  return text;
}

// ", epoch 2: 12800 of its 60000 rows" for a sync job (its place in its data; the JOB object
// counts epochs from 0), "" for the others.
function epochText(j) {
  if (j.epoch == null || j.epoch_rows == null || !j.rows_per_epoch) return "";
  return ", epoch " + (j.epoch + 1) + ": " + j.epoch_rows + " of its " + j.rows_per_epoch + " rows";
}

function stateCell(state) {
  return el("td", { class: "state state-" + state }, state);
}

function progressCell(progress) {
  if (progress == null) return el("td", {}, "-");
  const pct = Math.round(Math.min(1, Math.max(0, progress)) * 100);
  const bar = el("span", { class: "bar", title: pct + "%" }, el("span", { style: "width:" + pct + "%" }));
  return el("td", {}, bar, " " + pct + "%");
}

function listen(path, handlers) {
  if (stream) stream.close();
  stream = new EventSource(path);
  stream.onopen = () => { connection.textContent = "live"; };
  stream.onerror = () => { connection.textContent = "reconnecting"; };
  for (const [name, handler] of Object.entries(handlers)) {
    stream.addEventListener(name, event => {
      try {
        handler(JSON.parse(event.data));
      } catch (error) {
        connection.textContent = "page error: " + error.message;
        throw error;
      }
    });
  }
}

// --- jobs -------------------------------------------------------------------------------------

function jobsPage(filter) {
  const select = el("select", { id: "state-filter" },
    ...["", "queued", "starting", "running", "recovering", "succeeded", "failed", "cancelled"]
      .map(s => el("option", s === filter ? { value: s, selected: "" } : { value: s }, s || "every state")));
  select.onchange = () => { location.hash = "#/" + (select.value ? "?state=" + select.value : ""); };
  const body = el("div", { id: "jobs" });
  view.replaceChildren(el("h1", {}, "Jobs"), el("p", {}, "Show ", select), body);
  listen("/api/stream" + (filter ? "?state=" + encodeURIComponent(filter) : ""), {
    jobs: jobs => {
      const rows = jobs.map(j => el("tr", { "data-job": j.id },
        el("td", { class: "num" }, el("a", { href: "#/job/" + j.id }, j.id)),
        el("td", {}, j.name), stateCell(j.state), progressCell(j.progress),
        el("td", { class: "num" }, j.step), el("td", {}, j.owner_name || j.owner),
        el("td", {}, (j.hosts || []).join(", ")), el("td", {}, age(j.created)),
        el("td", {}, j.reason)));
      body.replaceChildren(jobs.length ? table(["id", "name", "state", "progress", { label: "step", num: true },
        "owner", "host", "age", "reason"], rows) : el("p", { class: "muted" }, "no jobs"));
    },
  });
}

// --- one job ----------------------------------------------------------------------------------

const chartPlans = [
  { title: "loss", names: ["train_loss", "eval_loss", "eval_mse"] },
  { title: "accuracy", names: ["train_accuracy", "eval_accuracy", "eval_auc"] },
  { title: "samples/s", names: ["samples_per_sec"] },
];
const colors = [
  '#1660c7', '#d9480f', '#2b8a3e', '#7048e8', '#c2255c', '#0b7285', '#e67700', '#5c940d', '#862e9c',
  '#495057'
];

function makeChart(canvas, plan) {
  const datasets = plan.names.map((name, i) => ({
    label: name, data: [], borderColor: colors[i], backgroundColor: colors[i],
    pointRadius: 0, borderWidth: 1.5, showLine: true,
  }));
  return new Chart(canvas, {
    type: "scatter",
    data: { datasets },
    options: {
      animation: false, maintainAspectRatio: false, parsing: false,
      plugins: {
        title: { display: true, text: plan.title },
        legend: { labels: { filter: (item, data) => data.datasets[item.datasetIndex].data.length > 0 } },
      },
      scales: { x: { title: { display: true, text: "step" } } },
    },
  });
}

// The final evaluation's per-class report of a job (the JOB object's class_report): its
// confusion matrix, a row per true class and a column per predicted class, the right
// predictions on the diagonal; then each class's precision, recall, F1 and support, and the
// macro and micro averages.
function classReport(r) {
  const classes = r.confusion.map((row, t) => t);
  const matrix = table(
      ['true \\ predicted', ...classes.map(c => ({label: String(c), num: true}))],
      r.confusion.map(
          (row, t) =>
              el('tr', {}, el('th', {}, String(t)),
                 ...row.map(
                     (n, p) => el(
                         'td',
                         {class: p === t ? 'num diagonal' : 'num', 'data-confusion': t + ',' + p},
                         n)))));
  const scores = (name, s) =>
      el('tr', {'data-class': name}, el('td', {}, name),
         el('td', {class: 'num'}, number(s.precision)), el('td', {class: 'num'}, number(s.recall)),
         el('td', {class: 'num'}, number(s.f1)), el('td', {class: 'num'}, s.support));
  return [
    el('p', {class: 'muted'},
       'The final evaluation, at step ' + r.step +
           ': a row per true class, a column per predicted class.'),
    matrix,
    el('p', {}),
    table(
        [
          'class', {label: 'precision', num: true}, {label: 'recall', num: true},
          {label: 'F1', num: true}, {label: 'support', num: true}
        ],
        [
          ...r.per_class.map(c => scores(String(c.class), c)), scores('macro', r.macro),
          scores('micro', r.micro)
        ]),
  ];
}

function jobPage(id) {
  const title = el("h1", {}, "Job " + id);
  const summary = el("p", { id: "summary" });
  const chartBox = el("div", { class: "charts" });
  const canvases = chartPlans.map(plan => {
    const canvas = el("canvas", { "data-chart": plan.title, "data-points": "0" });
    chartBox.append(el("div", { class: "chart" }, canvas));
    return canvas;
  });
  const metrics = el("div", { id: "metrics" });
  const perClassTitle = el('h2', {hidden: ''}, 'Per class');
  const perClass = el('div', {id: 'class-report'});
  const settings = el("pre", { id: "settings" });
  const workers = el("div", { id: "workers" });
  const events = el("div", { id: "events" });
  const checkpoints = el("div", { id: "checkpoints" });
  const logs = el("pre", { id: "logs" });
  const logNote = el("p", { class: "muted", id: "log-note" });
  const metricsTitle = el("h2", {}, "Metrics");
  view.replaceChildren(
      title, summary, chartBox, metricsTitle, metrics, perClassTitle, perClass,
      el('h2', {}, 'Workers'), workers, el('h2', {}, 'Logs'), logNote, logs, el('h2', {}, 'Events'),
      events, el('h2', {}, 'Checkpoints'), checkpoints, el('h2', {}, 'Settings'), settings);
  charts = chartPlans.map((plan, i) => makeChart(canvases[i], plan));
  const ratios = {};  // rank -> its latest compression_ratio
  const stepTimes = {};  // rank -> its latest step_seconds_p50 and _p95: {p50, p95}
  const dropped = {};    // rank -> its latest dropped_gradients (backup workers)

  const sweepLink = el('p', {id: 'sweep-link'});
  title.after(sweepLink);
  listen("/api/stream?job=" + encodeURIComponent(id), {
    job: j => {
      title.textContent = "Job " + j.id + " (" + j.name + ")";
      // A sweep's trial is tagged "sweep-ID" (daemon/server/sweep_driver.h).
      const sweepTag = (j.tags || []).map(t => t.match(/^sweep-(\d+)$/)).find(m => m);
      sweepLink.replaceChildren(...(
          sweepTag ?
              ['a trial of ', el('a', {href: '#/sweep/' + sweepTag[1]}, 'sweep ' + sweepTag[1])] :
              []));
      summary.replaceChildren(el("span", { class: "state state-" + j.state }, j.state),
        " at " + stepText(j) + epochText(j) + (j.restarts ? ", " + j.restarts + " restart(s)" : "") +
        ": " + j.reason);
      const ended = ["succeeded", "failed", "cancelled"].includes(j.state);
      metricsTitle.textContent = ended ? "Final metrics" : "Latest metrics";
      const names = Object.keys(j.metrics || {}).sort();
      metrics.replaceChildren(names.length ? table(["name", { label: "value", num: true }],
        names.map(name => el("tr", { "data-metric": name },
          el("td", {}, windowCounters.includes(name) ? name + " (one worker's last log_every steps)" : name),
          el("td", { class: "num" }, number(j.metrics[name]))))) : el("p", { class: "muted" }, "none yet"));
      perClassTitle.hidden = !j.class_report;
      perClass.replaceChildren(...(j.class_report ? classReport(j.class_report) : []));
      settings.textContent = j.settings ?? "the job's settings (its resolved job file) are shown " +
        "only by a listener with a token ([daemon] http_token_file), as its log lines are";
      const totals = Object.fromEntries((j.worker_totals || []).map(t => [t.rank, t]));
      // A job that compresses its gradients also shows what went on the wire and how much less
      // that was than the uncompressed exchange (each worker's latest compression_ratio).
      const compressing = Object.keys(ratios).length > 0;
      const wireColumns = compressing
        ? [{ label: "wire MB (total)", num: true }, { label: "compression ratio", num: true }] : [];
      // Of the communication, what the training thread waited for (all of it unless the exchange
      // overlaps the backward pass).
      const exchanging = (j.worker_totals || []).some(t => t.exposed_comm_seconds != null);
      const exposedColumn = exchanging ? [{label: 'exposed comm s (total)', num: true}] : [];
      // Each worker's step times over its last log window: a straggler's p95 stands out.
      const timed = Object.keys(stepTimes).length > 0;
      const stepColumn = timed ? [{label: 'step ms p50 / p95', num: true}] : [];
      // With backup workers: the steps that went on without each worker's gradient.
      const backups = Object.keys(dropped).length > 0;
      const droppedColumn = backups ? [{label: 'dropped gradients', num: true}] : [];
      const stepCell = rank => {
        const t = stepTimes[rank];
        return el('td', {class: 'num', 'data-step': String(rank)},
                  t ? number(t.p50 * 1e3, 3) + ' / ' + number(t.p95 * 1e3, 3) : '-');
      };
      workers.replaceChildren(table(
          [
            'rank', 'role', 'host', 'pid', 'state', 'exit', {label: 'compute s (total)', num: true},
            {label: 'comm s (total)', num: true}, ...exposedColumn, ...wireColumns, ...stepColumn,
            ...droppedColumn, 'started', 'ended'
          ],
          j.workers.map(
              w =>
                  el('tr', {}, el('td', {class: 'num'}, w.rank), el('td', {}, w.role),
                     el('td', {}, w.host), el('td', {class: 'num'}, w.pid), el('td', {}, w.state),
                     el('td', {}, w.signal != null ? 'signal ' + w.signal : w.exit_status ?? ''),
                     el('td', {class: 'num'}, number(totals[w.rank]?.compute_seconds, 2)),
                     el('td', {class: 'num'}, number(totals[w.rank]?.comm_seconds, 2)),
                     ...(exchanging ? [el('td', {class: 'num', 'data-exposed': String(w.rank)},
                                          number(totals[w.rank]?.exposed_comm_seconds, 2))] :
                                      []),
                     ...(compressing ?
                             [
                               el('td', {class: 'num'},
                                  number((totals[w.rank]?.wire_bytes ?? 0) / 1e6, 2)),
                               el('td', {class: 'num', 'data-ratio': String(w.rank)},
                                  number(ratios[w.rank], 1))
                             ] :
                             []),
                     ...(timed ? [stepCell(w.rank)] : []),
                     ...(backups ? [el('td', {class: 'num', 'data-dropped': String(w.rank)},
                                       number(dropped[w.rank], 0))] :
                                   []),
                     el('td', {}, when(w.started)),
                     // A process that left (a lost replica, its replacement's predecessor) and
                     // when; the rank's next row is the one that joined.
                     el('td', {}, w.ended != null ? when(w.ended) : '')))));
      events.replaceChildren(table(["time", "from", "to", "reason"], (j.events || []).map(e =>
        el("tr", {}, el("td", {}, when(e.time)), el("td", {}, e.from ?? ""), el("td", {}, e.to),
          el("td", {}, e.reason)))));
      checkpoints.replaceChildren(table([{ label: "step", num: true }, "time", { label: "bytes", num: true }],
        (j.checkpoints || []).map(c => el("tr", {}, el("td", { class: "num" }, c.step),
          el("td", {}, when(c.time)), el("td", { class: "num" }, number(c.bytes, 0))))));
    },
    metrics: rows => {
      // How many updates this page has drawn (a headless browser's test reads it).
      view.dataset.metricEvents = String(Number(view.dataset.metricEvents || 0) + 1);
      rows.forEach(r => {
        if (r.name === "compression_ratio") ratios[r.worker] = r.value;
        if (r.name === "step_seconds_p50") (stepTimes[r.worker] ??= {}).p50 = r.value;
        if (r.name === "step_seconds_p95") (stepTimes[r.worker] ??= {}).p95 = r.value;
        if (r.name === 'dropped_gradients') dropped[r.worker] = r.value;
        // The lead replica's curves, finite points only (NaN is null, infinities are strings).
        if (r.worker !== 0 || typeof r.value !== "number") return;
        chartPlans.forEach((plan, i) => {
          const k = plan.names.indexOf(r.name);
          if (k >= 0) charts[i].data.datasets[k].data.push({ x: r.step, y: r.value });
        });
      });
      charts.forEach((chart, i) => {
        chart.update("none");
        const points = chart.data.datasets.reduce((n, d) => n + d.data.length, 0);
        canvases[i].setAttribute("data-points", String(points));
      });
    },
    logs: lines => {
      const atBottom = logs.scrollTop + logs.clientHeight >= logs.scrollHeight - 4;
      // Lines after the first batch came live: each says how long after the daemon stored it.
      const live = logs.dataset.loaded === "1";
      logs.dataset.loaded = "1";
      for (const l of lines) {
        const attrs = { class: "line", "data-id": l.id };
        if (live) attrs["data-delay"] = (Date.now() / 1000 - l.time).toFixed(3);
        logs.append(el("div", attrs, "r" + l.worker + ": " + l.line));
      }
      while (logs.childElementCount > 2000) logs.firstElementChild.remove();
      if (atBottom) logs.scrollTop = logs.scrollHeight;
    },
    logs_hidden: why => { logNote.textContent = why.reason; },
  });
}

// --- sweeps -----------------------------------------------------------------------------------

function sweepsPage() {
  const body = el('div', {id: 'sweeps'});
  view.replaceChildren(el('h1', {}, 'Sweeps'), body);
  listen('/api/stream?sweeps=1', {
    sweeps: sweeps => {
      const rows = sweeps.map(
          s =>
              el('tr', {'data-sweep': s.id},
                 el('td', {class: 'num'}, el('a', {href: '#/sweep/' + s.id}, s.id)),
                 el('td', {}, s.name), stateCell(s.state), el('td', {}, s.method),
                 el('td', {}, s.metric + ' (' + s.goal + ')'),
                 el('td', {class: 'num'}, s.ended + '/' + s.trials),
                 el('td', {class: 'num'}, number(s.best)), el('td', {}, s.owner_name || s.owner),
                 el('td', {}, age(s.created)), el('td', {}, s.reason)));
      body.replaceChildren(
          sweeps.length ?
              table(
                  [
                    'id', 'name', 'state', 'method', 'metric', {label: 'trials ended', num: true},
                    {label: 'best', num: true}, 'owner', 'age', 'reason'
                  ],
                  rows) :
              el('p', {class: 'muted'}, 'no sweeps'));
    },
  });
}

// A trial's values as a short label: "optimizer.lr=0.1, train.batch_size=16".
function trialValues(parameters) {
  return Object.entries(parameters || {}).map(([k, v]) => k + '=' + JSON.stringify(v)).join(', ');
}

// One sweep: its leaderboard (the rows `dtrain sweep status --json` prints, best first) and one
// chart of every trial's curve of the sweep's metric, the best trial's drawn thick.
function sweepPage(id) {
  const title = el('h1', {}, 'Sweep ' + id);
  const summary = el('p', {id: 'sweep-summary'});
  const canvas = el('canvas', {'data-chart': 'sweep', 'data-points': '0', 'data-series': '0'});
  const board = el('div', {id: 'leaderboard'});
  view.replaceChildren(
      title, summary, el('div', {class: 'chart wide'}, canvas), el('h2', {}, 'Leaderboard'), board);
  const chart = new Chart(canvas, {
    type: 'scatter',
    data: {datasets: []},
    options: {
      animation: false,
      maintainAspectRatio: false,
      parsing: false,
      plugins: {
        title: {display: true, text: ''},
        legend: {position: 'bottom'},
        tooltip: {
          callbacks:
              {label: c => c.dataset.label + ': ' + number(c.parsed.y) + ' at step ' + c.parsed.x}
        },
      },
      scales: {x: {title: {display: true, text: 'step'}}},
    },
  });
  charts = [chart];
  listen('/api/stream?sweep=' + encodeURIComponent(id), {
    sweep: page => {
      const s = page.sweep, b = page.board;
      title.textContent = 'Sweep ' + s.id + ' (' + s.name + ')';
      const ended =
          b.trials.filter(t => ['succeeded', 'failed', 'cancelled', 'removed'].includes(t.state))
              .length;
      summary.replaceChildren(
          el('span', {class: 'state state-' + s.state}, s.state),
          ': ' + s.method + ' over ' + b.trials.length + ' trials, ' + ended + ' ended, at most ' +
              s.max_concurrent + ' at a time; ranked by ' + b.metric + ' (' + b.goal + ')' +
              (s.reason ? ': ' + s.reason : ''));
      const best = b.trials.length && b.trials[0].metric != null ? b.trials[0].trial : null;
      const keys = b.trials.length ? Object.keys(b.trials[0].parameters) : [];
      const asha = b.method === 'asha';
      board.replaceChildren(table(
          [
            {label: 'rank', num: true}, {label: 'trial', num: true}, ...keys, 'state',
            {label: 'steps', num: true}, ...(asha ? [{label: 'rung', num: true}] : []),
            {label: b.metric, num: true}, 'reason'
          ],
          b.trials.map(
              (t, i) =>
                  el('tr', {'data-trial': t.trial, class: t.trial === best ? 'best' : ''},
                     el('td', {class: 'num'}, t.metric != null ? i + 1 : '-'),
                     el('td', {class: 'num'},
                        t.job ? el('a', {href: '#/job/' + t.job}, t.trial) : t.trial),
                     ...keys.map(k => el('td', {}, JSON.stringify(t.parameters[k]))),
                     stateCell(t.state), el('td', {class: 'num'}, t.steps),
                     ...(asha ? [el('td', {class: 'num'}, t.rung ?? '-')] : []),
                     el('td', {class: 'num'}, number(t.metric)), el('td', {}, t.reason)))));
      const values = Object.fromEntries(b.trials.map(t => [t.trial, t.parameters]));
      chart.options.plugins.title.text = b.metric + ' of every trial';
      chart.data.datasets = page.series.map(p => {
        const color = colors[p.trial % colors.length];
        const top = p.trial === best;
        return {
          label: 'trial ' + p.trial + (top ? ' (best)' : '') + ': ' + trialValues(values[p.trial]),
          data: p.points.map(([x, y]) => ({x, y})),
          borderColor: color,
          backgroundColor: color,
          pointRadius: 0,
          borderWidth: top ? 4 : 1.2,
          showLine: true,
          order: top ? 0 : 1,
        };
      });
      // Past a couple of dozen trials the legend would hide the chart: hovering names a curve.
      chart.options.plugins.legend.display = page.series.length <= 24;
      chart.update('none');
      canvas.setAttribute('data-series', String(page.series.length));
      canvas.setAttribute(
          'data-points', String(page.series.reduce((n, p) => n + p.points.length, 0)));
      canvas.setAttribute('data-best', best == null ? '' : String(best));
    },
  });
}

// --- nodes ------------------------------------------------------------------------------------

function nodesPage() {
  const body = el("div", { id: "nodes" });
  view.replaceChildren(el("h1", {}, "Nodes"), body);
  listen("/api/stream?nodes=1", {
    nodes: nodes => body.replaceChildren(table(["name", "address", "state", { label: "cores", num: true },
      { label: "running", num: true }, { label: "queued", num: true }, "since", "error"],
      nodes.map(n => el("tr", {}, el("td", {}, n.name + (n.self ? " (this daemon)" : "")),
        el("td", {}, n.address), el("td", { class: "state state-" + (n.state === "up" ? "succeeded" : "failed") }, n.state),
        el("td", { class: "num" }, n.cores), el("td", { class: "num" }, n.running),
        el("td", { class: "num" }, n.queued), el("td", {}, n.since ? age(n.since) : ""),
        el("td", {}, n.error || ""))))),
  });
}

function route() {
  charts.forEach(c => c.destroy());
  charts = [];
  const hash = location.hash || "#/";
  const job = hash.match(/^#\/job\/(\d+)/);
  if (job) return jobPage(job[1]);
  const sweep = hash.match(/^#\/sweep\/(\d+)/);
  if (sweep) return sweepPage(sweep[1]);
  if (hash.startsWith('#/sweeps')) return sweepsPage();
  if (hash.startsWith("#/nodes")) return nodesPage();
  const state = hash.match(/state=([a-z]+)/);
  return jobsPage(state ? state[1] : "");
}

window.addEventListener("hashchange", route);
route();
