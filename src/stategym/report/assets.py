"""The report page's inline style sheet and viewer script (no file is fetched at view time).

The script reads three kinds of data block: ``episode-index`` (one short entry per episode,
what the filters and the list use), ``ep-N`` (one episode's rounds) and ``task-K`` (the
task an ``ep-N`` names), both parsed only when the episode is opened, so a report of
thousands of episodes opens quickly. It builds every element with ``createElement`` and
puts every string in with ``textContent``: no data ever passes through ``innerHTML``, an
attribute handler or a URL. ``#episode=N`` in the address opens episode ``N`` on load
(links and the browser tests use it), and writes where the episode and its call graphs
start into ``data-detail-top`` and ``data-graphs-top`` on ``<body>`` (for cropped
screenshots, ``docs/report.md``).
"""

from __future__ import annotations

STYLE = """
:root { --blue:#0072B2; --orange:#E69F00; --green:#009E73; --red:#D55E00; --purple:#CC79A7;
  --sky:#56B4E9; --ink:#1b1b1b; --muted:#5f6368; --line:#d9dce1; --bg:#fafafa; }
* { box-sizing: border-box; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--ink);
  margin: 0; background: #fff; }
header { padding: 14px 24px; border-bottom: 1px solid var(--line); background: var(--bg); }
header h1 { margin: 0 0 4px; font-size: 20px; }
nav a { margin-right: 14px; color: var(--blue); }
main { padding: 8px 24px 40px; max-width: 1400px; }
h2 { border-bottom: 2px solid var(--line); padding-bottom: 4px; margin-top: 28px; }
h3 { margin: 18px 0 6px; font-size: 15px; }
table.grid { border-collapse: collapse; font-size: 12.5px; margin: 4px 0 12px; }
table.grid th, table.grid td { border: 1px solid var(--line); padding: 3px 7px; }
table.grid th { background: var(--bg); text-align: left; }
table.grid td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
caption { caption-side: bottom; text-align: left; color: var(--muted); font-size: 12px;
  padding-top: 4px; }
figure.plot { margin: 10px 0 18px; }
figure.plot svg { max-width: 100%; height: auto; }
figcaption { color: var(--muted); font-size: 12px; }
.notes { color: var(--red); }
dl.config { display: grid; grid-template-columns: max-content auto; gap: 1px 12px;
  font-size: 12px; }
dl.config dt { color: var(--muted); } dl.config dd { margin: 0; font-family: monospace; }
#filters { display: flex; flex-wrap: wrap; gap: 8px 14px; align-items: end; margin: 8px 0; }
#filters label { display: flex; flex-direction: column; font-size: 12px; color: var(--muted); }
#filters select, #filters input { font: inherit; padding: 2px 4px; }
#list table { border-collapse: collapse; font-size: 12.5px; width: 100%; }
#list th, #list td { border-bottom: 1px solid var(--line); padding: 3px 6px; text-align: left; }
#list tr.episode { cursor: pointer; } #list tr.episode:hover { background: #eef5fb; }
#list tr.open { background: #dcebf7; }
#pager { margin: 6px 0; } #pager button { margin-right: 6px; }
.badge { display: inline-block; padding: 0 6px; border-radius: 8px; font-size: 11.5px;
  border: 1px solid currentColor; white-space: nowrap; }
.yes, .safe, .abstained { color: #00684a; } .no, .harmful, .wrong { color: #a33b00; }
.unverified { color: #8a5d00; } .missed { color: #7a3d66; } .none { color: var(--muted); }
.ungrounded { color: #a33b00; font-weight: 600; } .user { color: #005a8c; }
.tool { color: #00684a; } .request { color: var(--muted); }
#detail { margin-top: 14px; }
.task { display: grid; grid-template-columns: repeat(auto-fit, minmax(320px, 1fr)); gap: 10px; }
.graphs { display: flex; flex-wrap: wrap; gap: 10px; align-items: flex-start; }
.graphs > .box { flex: 0 1 auto; min-width: 320px; max-width: 100%; }
.box { border: 1px solid var(--line); border-radius: 6px; padding: 8px 10px; background: #fff; }
.box h4 { margin: 0 0 6px; font-size: 13px; }
.box table { border-collapse: collapse; font-size: 12px; }
.box td { padding: 1px 6px 1px 0; vertical-align: top; }
.round { border-left: 4px solid var(--sky); margin: 10px 0; padding: 4px 0 4px 10px; }
.round.say { border-left-color: var(--purple); }
.round.invalid { border-left-color: var(--red); }
.round .head { font-weight: 600; font-size: 13px; }
.round .head .meta { font-weight: 400; color: var(--muted); margin-left: 8px; }
.batch { display: flex; flex-wrap: wrap; gap: 8px; margin: 4px 0; }
.call { border: 1px solid var(--line); border-radius: 6px; padding: 6px 8px; min-width: 220px;
  max-width: 460px; flex: 1 1 260px; background: var(--bg); }
.call .name { font-family: monospace; font-weight: 600; }
pre { white-space: pre-wrap; word-break: break-word; margin: 3px 0; font-size: 11.5px;
  max-height: 180px; overflow: auto; background: #fff; border: 1px solid var(--line);
  padding: 3px 5px; }
.said { margin: 3px 0; } .said b { color: var(--muted); font-weight: 600; }
.events { font-size: 12px; margin: 3px 0; }
.events .pos { color: #00684a; } .events .neg { color: #a33b00; }
.error { color: #a33b00; font-size: 12px; }
.cgwrap { overflow: auto; max-height: 760px; }
svg.cg { font: 11px monospace; display: block; }
svg.cg .colhead { fill: var(--muted); font-family: system-ui, sans-serif; }
svg.cg rect { fill: #eef5fb; stroke: #0072B2; stroke-width: 1.2; }
svg.cg .write rect { fill: #fdf1dc; stroke: #E69F00; }
svg.cg .commit rect { fill: #fbe3d6; stroke: #D55E00; stroke-width: 2.2; }
svg.cg .ask rect, svg.cg .confirm rect, svg.cg .say rect { fill: #f6e6f0; stroke: #CC79A7; }
svg.cg .extra rect, svg.cg .missed rect { fill: #fff; stroke-dasharray: 4 3; }
svg.cg .missed text { fill: var(--muted); }
svg.cg path.edge { fill: none; stroke: #777; stroke-width: 1.1; opacity: 0.85; }
svg.cg path.pipe { stroke: #0072B2; } svg.cg path.gate { stroke: #E69F00; stroke-dasharray: 1.5 2; }
svg.cg path.decide { stroke: #009E73; stroke-dasharray: 7 3; }
svg.cg path.order { stroke: #555; stroke-dasharray: 3 3; }
@media print { #filters, #pager, nav { display: none; } .round { break-inside: avoid; } }
"""

SCRIPT = r"""
(function () {
  "use strict";
  var PAGE = 50;
  var index = JSON.parse(document.getElementById("episode-index").textContent);
  var state = { page: 0, open: null, shown: index };

  function el(tag, cls, content) {
    var node = document.createElement(tag);
    if (cls) { node.className = cls; }
    if (content !== undefined && content !== null) { node.textContent = String(content); }
    return node;
  }
  function add(parent) {
    for (var i = 1; i < arguments.length; i++) {
      if (arguments[i]) { parent.appendChild(arguments[i]); }
    }
    return parent;
  }
  function badge(value, cls) { return el("span", "badge " + (cls || value), value); }
  function num(x, digits) { return x === null || x === undefined ? "-" : x.toFixed(digits); }
  function field(id) { return document.getElementById(id); }

  function options(id, key) {
    var seen = {}, select = field(id);
    index.forEach(function (e) { seen[e[key]] = true; });
    Object.keys(seen).sort().forEach(function (value) {
      var option = el("option", null, value);
      option.value = value;
      select.appendChild(option);
    });
  }

  function matches(e) {
    var f = { agent: field("f-agent").value, domain: field("f-domain").value,
      knobs: field("f-knobs").value, risk: field("f-risk").value, goal: field("f-goal").value };
    var low = parseFloat(field("f-rmin").value), high = parseFloat(field("f-rmax").value);
    if (f.agent && e.agent !== f.agent) { return false; }
    if (f.domain && e.domain !== f.domain) { return false; }
    if (f.knobs && e.knobs !== f.knobs) { return false; }
    if (f.risk && e.risk !== f.risk) { return false; }
    if (f.goal && String(e.goal) !== f.goal) { return false; }
    if (!isNaN(low) && e.R < low) { return false; }
    if (!isNaN(high) && e.R > high) { return false; }
    return true;
  }

  function renderList() {
    var body = field("list-body");
    body.textContent = "";
    var first = state.page * PAGE, rows = state.shown.slice(first, first + PAGE);
    rows.forEach(function (e) {
      var tr = el("tr", "episode" + (state.open === e.n ? " open" : ""));
      tr.dataset.n = String(e.n);
      [e.n, e.domain, e.agent, e.seed, e.sample, e.knobs].forEach(function (v) {
        add(tr, el("td", null, v));
      });
      add(tr, add(el("td"), badge(e.goal ? "yes" : "no")));
      add(tr, el("td", null, num(e.R, 2)));
      add(tr, add(el("td"), badge(e.risk)));
      add(tr, el("td", null, e.rounds));
      add(tr, el("td", null, e.lost));
      tr.addEventListener("click", function () { openEpisode(e.n); });
      body.appendChild(tr);
    });
    var pages = Math.max(1, Math.ceil(state.shown.length / PAGE));
    field("page-info").textContent = state.shown.length + " of " + index.length +
      " episodes; page " + (state.page + 1) + " of " + pages;
    field("prev").disabled = state.page === 0;
    field("next").disabled = state.page >= pages - 1;
  }

  function applyFilters() {
    state.shown = index.filter(matches);
    state.page = 0;
    renderList();
  }

  function row(cells) {
    var tr = el("tr");
    cells.forEach(function (c) {
      add(tr, typeof c === "object" && c ? add(el("td"), c) : el("td", null, c));
    });
    return tr;
  }
  function box(title) { return add(el("div", "box"), el("h4", null, title)); }
  function tableOf(rows) {
    var t = el("table");
    rows.forEach(function (r) { t.appendChild(row(r)); });
    return t;
  }

  function taskView(task) {
    var wrap = el("div", "task");
    add(wrap, add(box("Request"), el("p", null, task.request)));
    add(wrap, add(box("Hidden and given slots"), tableOf(task.slots.map(function (s) {
      return [s[0], badge(s[1], s[1] === "missing" ? "ungrounded" : "none"), s[2]];
    }))));
    var order = task.priority.map(function (p) { return p[0] + " above " + p[1]; }).join("; ");
    var hidden = task.priorities_hidden ? " (order hidden from the agent)" : "";
    add(wrap, add(box("Constraints" + hidden),
      tableOf(task.constraints.map(function (c) { return [c[0], c[1], c[2]]; })),
      el("p", "events", "priority: " + (order || "none"))));
    var decisions = box("Best options and decision points");
    add(decisions, el("p", null, "best: " + (task.best.join(", ") || "(do nothing)")));
    task.decisions.forEach(function (d) {
      add(decisions, el("div", "said", d.id + ": " + d.tool + (d.should_commit ? " commits " +
        (d.option || "") : " must not commit")));
      add(decisions, tableOf(d.preconditions.map(function (p) {
        return ["needs", p[0], "from " + p[1]];
      })));
    });
    return add(wrap, decisions);
  }

  function callView(call) {
    var card = add(el("div", "call"), el("span", "name", call.name), document.createTextNode(" "),
      call.effect ? badge(call.effect, "none") : null);
    add(card, tableOf(call.args.map(function (a) {
      var source = a[2].split(" ")[0];
      return [a[0], a[1], badge(a[2], source)];
    })));
    if (call.error) { add(card, el("div", "error", "error: " + call.error)); }
    if (call.result !== null) { add(card, el("pre", null, call.result)); }
    return card;
  }

  function eventsView(events, label) {
    if (!events.length) { return null; }
    var wrap = el("div", "events", label);
    events.forEach(function (e) {
      add(wrap, document.createTextNode(" "),
        el("span", e[3] > 0 ? "pos" : e[3] < 0 ? "neg" : null,
          e[0] + ":" + e[1] + (e[2] ? "(" + e[2] + ")" : "") + " " + num(e[3], 3)));
    });
    return wrap;
  }

  function said(who, words) {
    if (words === null || words === undefined || words === "") { return null; }
    return add(el("div", "said"), el("b", null, who), el("span", null, words));
  }

  function roundView(r) {
    var div = el("div", "round " + r.kind);
    var meta = "clock " + r.clock + ", +" + r.latency + " ticks; reward " + num(r.reward, 3) +
      ", running R " + num(r.running, 3);
    add(div, add(el("div", "head", "round " + r.i), el("span", "meta", meta)));
    if (r.calls.length) {
      add(div, add.apply(null, [el("div", "batch")].concat(r.calls.map(callView))));
    }
    add(div, said("agent: ", r.say), said("user: ", r.reply));
    add(div, said("user (unprompted): ", r.notice));
    if (r.model !== null) {
      add(div, add(el("details"), el("summary", null, "model text"), el("pre", null, r.model)));
    }
    if (r.error) { add(div, el("div", "error", "told the agent: " + r.error)); }
    if (r.raw !== null) { add(div, el("pre", null, r.raw)); }
    if (r.format_errors.length) {
      add(div, el("div", "error", "format errors: " + r.format_errors.join(", ")));
    }
    r.fired.forEach(function (f) { add(div, el("div", "events", "event fired: " + f)); });
    r.charges.forEach(function (c) {
      add(div, el("div", "events", "charge " + c[0] + " (" + c[1] + ") " + c[2] + " -> " + c[3]));
    });
    r.commits.forEach(function (c) {
      add(div, add(el("div", "events"), document.createTextNode("commit: "), badge(c[0]),
        document.createTextNode(c[1] ? " " + c[1] : "")));
    });
    add(div, eventsView(r.events, "events:"));
    return div;
  }

  var SVG = "http://www.w3.org/2000/svg";
  var G = { col: 156, w: 140, h: 20, row: 25, top: 24, pad: 6, chars: 20 };
  function svgEl(tag, attrs, content) {
    var node = document.createElementNS(SVG, tag);
    Object.keys(attrs || {}).forEach(function (k) { node.setAttribute(k, String(attrs[k])); });
    if (content !== undefined) { node.textContent = String(content); }
    return node;
  }
  function short(text) {
    return text.length > G.chars ? text.slice(0, G.chars - 1) + "\u2026" : text;
  }

  // nodes: [text, kind, column, row, state, title]; edges: [src, dst, kind], src's column
  // always below dst's, so every edge runs left to right and needs no arrowhead
  function graphSvg(graph, done) {
    var rows = 1;
    graph.nodes.forEach(function (n) { rows = Math.max(rows, n[3] + 1); });
    var width = Math.max(1, graph.columns.length) * G.col + G.pad;
    var height = G.top + rows * G.row + G.pad;
    var svg = svgEl("svg", { "class": "cg", width: width, height: height,
      viewBox: "0 0 " + width + " " + height, role: "img" });
    function x(n) { return G.pad + n[2] * G.col; }
    function y(n) { return G.top + n[3] * G.row; }
    graph.columns.forEach(function (title, c) {
      svg.appendChild(svgEl("text", { "class": "colhead", x: G.pad + c * G.col, y: 14 }, title));
    });
    graph.edges.forEach(function (e) {
      var a = graph.nodes[e[0]], b = graph.nodes[e[1]];
      var x1 = x(a) + G.w, y1 = y(a) + G.h / 2, x2 = x(b), y2 = y(b) + G.h / 2;
      var mid = (x1 + x2) / 2;
      var curve = [x1, y1, "C" + mid, y1, mid, y2, x2, y2].join(" ");
      var path = svgEl("path", { "class": "edge " + e[2].split("+")[0], d: "M" + curve });
      path.appendChild(svgEl("title", {}, a[0] + " \u2192 " + b[0] + " (" + e[2] + ")"));
      svg.appendChild(path);
    });
    graph.nodes.forEach(function (n, i) {
      var state = done ? (done[i] ? "done" : "missed") : n[4];
      var g = svgEl("g", { "class": "node " + n[1] + " " + state,
        transform: "translate(" + x(n) + "," + y(n) + ")" });
      g.appendChild(svgEl("rect", { width: G.w, height: G.h, rx: 4 }));
      g.appendChild(svgEl("text", { x: 5, y: 14 }, short(n[0])));
      g.appendChild(svgEl("title", {}, n[5] + " [" + n[1] + ", " + state + "]"));
      svg.appendChild(g);
    });
    return svg;
  }

  function graphView(title, graph, done) {
    var b = box(title + ": " + graph.nodes.length + " nodes, " + graph.edges.length + " edges");
    return add(b, add(el("div", "cgwrap"), graphSvg(graph, done)));
  }

  function graphsView(d) {
    var done = d.task.gold.nodes.map(function () { return false; });
    d.gold_done.forEach(function (i) { done[i] = true; });
    var executed = d.gold_done.length + " of " + done.length + " gold nodes executed";
    return [
      add(el("div", "graphs"), graphView("executed, by round", d.executed, null),
        graphView("gold, by earliest round (" + executed + ")", d.task.gold, done)),
      el("p", "events", "Edges run left to right: pipe (a result's value used as an " +
        "argument; solid blue), gate (the user's answer; dotted orange), decide (long dash, " +
        "green), order (dashed, grey). Fill: read (blue), write (orange), commit (red), " +
        "message (purple). Dashed border: executed but no gold node (extra), or gold but " +
        "never executed (missed). Hover a node for its call id.")
    ];
  }

  function openEpisode(n) {
    var entry = index.find(function (e) { return e.n === n; });
    var block = document.getElementById("ep-" + n);
    if (!entry || !block) { return; }
    var d = JSON.parse(block.textContent);
    d.task = JSON.parse(document.getElementById(d.task).textContent);
    state.open = n;
    var view = field("detail");
    view.textContent = "";
    add(view, el("h3", null, "Episode " + n + ": " + entry.agent + " on " + entry.domain +
      " seed " + entry.seed + " (" + entry.knobs + ")"));
    var goal = badge(entry.goal ? "goal reached" : "goal missed", entry.goal ? "yes" : "no");
    var summary = add(el("p"), goal,
      document.createTextNode(" R = " + num(entry.R, 3) + " "), badge(entry.risk),
      document.createTextNode(" " + d.ended + "; " + Object.keys(entry.dims).map(function (k) {
        return k + " " + num(entry.dims[k], 2); }).join(", ")));
    if (d.outcome) {
      var committed = d.outcome.committed.join(", ") || "nothing";
      add(summary, document.createTextNode("; committed " + committed +
        ", spent " + d.outcome.spent + ", lost " + d.outcome.lost));
    }
    add(view, summary);
    if (d.outcome) { add(view, said("answer: ", d.outcome.answer)); }
    add(view, taskView(d.task));
    add(view, el("h3", null, "Rounds"));
    d.rounds.forEach(function (r) { add(view, roundView(r)); });
    add(view, eventsView(d.terminal, "at the end:"));
    add(view, el("h3", null, "Call graph: executed and gold"));
    graphsView(d).forEach(function (part) { add(view, part); });
    document.body.dataset.opened = String(n);
    renderList();
  }

  ["f-agent", "f-domain", "f-knobs", "f-risk", "f-goal"].forEach(function (id) {
    field(id).addEventListener("change", applyFilters);
  });
  ["f-rmin", "f-rmax"].forEach(function (id) {
    field(id).addEventListener("input", applyFilters);
  });
  field("prev").addEventListener("click", function () { state.page -= 1; renderList(); });
  field("next").addEventListener("click", function () { state.page += 1; renderList(); });
  options("f-agent", "agent");
  options("f-domain", "domain");
  options("f-knobs", "knobs");
  options("f-risk", "risk");
  renderList();
  var wanted = /^#episode=(\d+)$/.exec(window.location.hash);
  if (wanted) {
    openEpisode(parseInt(wanted[1], 10));
    // where the opened episode starts, for screenshots cropped to it (docs/report.md)
    document.body.dataset.detailTop = String(Math.round(field("detail").offsetTop));
    var graphs = document.querySelector("#detail .graphs");
    if (graphs) { document.body.dataset.graphsTop = String(Math.round(graphs.offsetTop)); }
  }
  document.body.dataset.viewer = "ready";
})();
"""
