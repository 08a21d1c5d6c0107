"""The view's style and script, inlined into every page (a page loads nothing).

The script never turns session text into HTML: it places fragments the Python side escaped
(`_view_parts`) and writes its own words with `textContent`.
"""

PAGE_STYLE = """
:root { --fg: #1d2330; --muted: #69707d; --line: #d9dde3; --bg: #fff; --soft: #f5f6f8;
  --accent: #2f6fde; --bad: #c0392b; --ok: #2e8b57; }
* { box-sizing: border-box; }
body { margin: 0; font: 14px/1.45 system-ui, sans-serif; color: var(--fg); background: var(--bg); }
main { max-width: 1280px; margin: 0 auto; padding: 16px 24px 64px; }
h1 { font-size: 22px; margin: 8px 0; } h2 { font-size: 18px; margin: 28px 0 8px; }
h3 { font-size: 15px; margin: 12px 0 6px; } h4 { margin: 6px 0; font-size: 13px; }
pre { white-space: pre-wrap; word-break: break-word; margin: 4px 0; padding: 6px 8px;
  background: var(--soft); border-radius: 4px; max-height: 24em; overflow: auto;
  font: 12px/1.4 ui-monospace, monospace; }
code { font: 12px ui-monospace, monospace; }
.meta { color: var(--muted); font-size: 12px; margin-left: 8px; }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: 2px 16px; margin: 0; }
dl.facts dt { color: var(--muted); } dl.facts dd { margin: 0; }
svg { width: 100%; height: auto; background: var(--soft); border-radius: 6px; }
svg text { font-size: 11px; fill: var(--muted); }
#tokens { fill: none; stroke: var(--accent); stroke-width: 1.5; }
.limit { stroke-dasharray: 6 4; stroke-width: 1; }
.limit.window { stroke: var(--bad); } .limit.trigger { stroke: #d68910; }
#cursor { stroke: var(--fg); stroke-width: 1; opacity: .35; }
.mark { cursor: pointer; } .mark line { stroke-width: 1; opacity: .35; }
.mark circle { stroke: #fff; stroke-width: 1.5; }
.mark:hover line, .mark:focus line { opacity: 1; }
.truncation { --k: #8e44ad; } .prune { --k: #d35400; } .preview { --k: #b7950b; }
.compaction { --k: #c0392b; } .provider-compaction { --k: #7b241c; } .restore { --k: #27ae60; }
.revert { --k: #2c3e50; } .redaction { --k: #000; }
.mark line { stroke: var(--k); } .mark circle { fill: var(--k); }
.legend .key { display: inline-block; margin-right: 12px; font-size: 12px; }
.legend .key::before { content: ""; display: inline-block; width: 10px; height: 10px;
  border-radius: 50%; background: var(--k); margin-right: 4px; }
.controls { display: flex; flex-wrap: wrap; gap: 16px; }
.controls input[type=range] { width: 320px; vertical-align: middle; }
.controls input[type=number] { width: 80px; }
.columns { display: grid; grid-template-columns: 1fr 1fr; gap: 16px; }
.grid { display: grid; grid-template-columns: repeat(auto-fit, minmax(360px, 1fr)); gap: 16px; }
.scroll { max-height: 36em; overflow: auto; }
article.msg { border: 1px solid var(--line); border-left: 4px solid var(--line);
  border-radius: 4px; padding: 6px 8px; margin: 6px 0; }
article.role-user { border-left-color: var(--accent); }
article.role-assistant { border-left-color: var(--ok); }
article.role-tool { border-left-color: #999; } article.role-system { border-left-color: #555; }
article.summary { background: #fff8e6; }
article .role { font-weight: 600; text-transform: uppercase; font-size: 11px; }
.badge { display: inline-block; padding: 0 6px; margin-left: 6px; border-radius: 8px;
  background: var(--soft); border: 1px solid var(--line); font-size: 11px; }
.badge.cut { background: #fdebd0; } .badge.summary { background: #fcf3cf; }
.badge.bad { background: #fadbd8; } .badge.ok { background: #d5f5e3; }
.tool { font-weight: 600; font-family: ui-monospace, monospace; }
.result.error pre.shown { border-left: 3px solid var(--bad); }
.status-pruned pre.shown, .status-previewed pre.shown { color: var(--muted); }
details summary { cursor: pointer; color: var(--muted); font-size: 12px; }
ol.pager, ul.pager { list-style: none; padding: 0; margin: 0; }
li.event { display: grid; grid-template-columns: 56px 170px 80px 170px 1fr; gap: 8px;
  padding: 2px 4px; border-bottom: 1px solid var(--soft); cursor: pointer; font-size: 12px; }
li.event .num { text-align: right; } li.event time { color: var(--muted); }
li.event[class*=kind-] .type { color: var(--k); font-weight: 600; }
li.event.current { background: #eaf1fd; }
.pager-nav { margin: 6px 0; font-size: 12px; color: var(--muted); }
.pager-nav button { margin: 0 4px; }
.diff-entered { border-left: 3px solid var(--ok); padding-left: 6px; }
.diff-left { border-left: 3px solid var(--bad); padding-left: 6px; }
.diff-changed { border-left: 3px solid #d68910; padding-left: 6px; }
table { border-collapse: collapse; } td, th { padding: 2px 10px; text-align: right; }
th { border-bottom: 1px solid var(--line); } tfoot td { border-top: 1px solid var(--line); }
#trail ul.pager li { margin: 4px 0; }
@media (max-width: 800px) { .columns { grid-template-columns: 1fr; } }
"""

PAGE_SCRIPT = """
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("view-data").textContent);
  var PAGE = 200, MESSAGES = 50;  // list items, and messages (larger), a page

  function nav(container) {
    var anchor = container.tagName === "TBODY" ? container.closest("table") : container;
    var el = document.createElement("div");
    el.className = "pager-nav";
    anchor.parentNode.insertBefore(el, anchor.nextSibling);
    return el;
  }

  function button(text, onclick) {
    var b = document.createElement("button");
    b.type = "button";
    b.textContent = text;
    b.addEventListener("click", onclick);
    return b;
  }

  // A list shown `size` (PAGE) items at a time: `items` are escaped HTML fragments.
  function Pager(container, items, empty, size) {
    this.container = container;
    this.size = size || PAGE;
    this.nav = nav(container);
    this.empty = empty || "none";
    this.set(items);
  }
  Pager.prototype.set = function (items) {
    this.items = items;
    this.page = 0;
    this.draw();
  };
  Pager.prototype.show = function (index) {
    this.page = Math.floor(index / this.size);
    this.draw();
  };
  Pager.prototype.draw = function () {
    var self = this, n = this.items.length, pages = Math.max(1, Math.ceil(n / this.size));
    this.page = Math.min(Math.max(this.page, 0), pages - 1);
    var from = this.page * this.size, to = Math.min(n, from + this.size);
    this.container.innerHTML = this.items.slice(from, to).join("");
    this.nav.textContent = "";
    if (n === 0) { this.nav.textContent = this.empty; return; }
    if (pages === 1) { this.nav.textContent = n + " shown"; return; }
    this.nav.appendChild(button("previous", function () { self.page -= 1; self.draw(); }));
    this.nav.appendChild(document.createTextNode((from + 1) + "-" + to + " of " + n));
    this.nav.appendChild(button("next", function () { self.page += 1; self.draw(); }));
  };

  var lists = {};
  Object.keys(data.lists).forEach(function (key) {
    var el = document.getElementById(key === "events" ? "event-list" : key + "-list");
    if (el) { lists[key] = new Pager(el, data.lists[key]); }
  });

  function liveAt(seq) {
    var found = [];
    for (var i = 0; i < data.versions.length; i++) {
      var v = data.versions[i];
      if (v[0] <= seq && (v[1] === null || seq < v[1])) { found.push(i); }
    }
    return found;
  }

  var a = document.getElementById("seq-a"), an = document.getElementById("seq-a-n");
  var b = document.getElementById("seq-b"), bn = document.getElementById("seq-b-n");
  var context = document.getElementById("context"), diff = document.getElementById("diff");
  var info = document.getElementById("replay-info");
  var contextPager = context ? new Pager(context, [], "none", MESSAGES) : null;
  var diffPagers = {};

  function diffPart(key, title, fragments) {
    var box = document.getElementById("diff-" + key);
    if (!box) {
      box = document.createElement("div");
      box.id = "diff-" + key;
      box.className = "diff-" + key;
      var h = document.createElement("h4");
      box.appendChild(h);
      var list = document.createElement("div");
      box.appendChild(list);
      diff.appendChild(box);
      diffPagers[key] = new Pager(list, [], "none", MESSAGES);
    }
    box.firstChild.textContent = title + " (" + fragments.length + ")";
    diffPagers[key].set(fragments);
  }

  function clamp(value) {
    var n = parseInt(value, 10);
    if (isNaN(n)) { n = data.last; }
    return Math.min(Math.max(n, data.first), data.last);
  }

  function moveCursor(seq) {
    var cursor = document.getElementById("cursor"), line = document.getElementById("tokens");
    if (!cursor || !line) { return; }
    var index = data.seqs.indexOf(seq);
    var point = line.getAttribute("points").split(" ")[index];
    if (!point) { return; }
    var x = point.split(",")[0];
    cursor.setAttribute("x1", x);
    cursor.setAttribute("x2", x);
  }

  function replay() {
    if (!a) { return; }
    var sa = clamp(a.value), sb = clamp(b.value);
    a.value = an.value = sa;
    b.value = bn.value = sb;
    var atA = liveAt(sa), atB = liveAt(sb);
    contextPager.set(atA.map(function (i) { return data.versions[i][3]; }));
    info.textContent = atA.length + " messages live after event " + sa;
    moveCursor(sa);
    var byIdA = {}, byIdB = {};
    atA.forEach(function (i) { byIdA[data.versions[i][2]] = i; });
    atB.forEach(function (i) { byIdB[data.versions[i][2]] = i; });
    var entered = [], left = [], changed = [];
    atB.forEach(function (i) {
      var id = data.versions[i][2];
      if (!(id in byIdA)) { entered.push(data.versions[i][3]); }
      else if (byIdA[id] !== i) { changed.push(data.versions[i][3]); }
    });
    atA.forEach(function (i) {
      if (!(data.versions[i][2] in byIdB)) { left.push(data.versions[i][3]); }
    });
    diffPart("entered", "entered between " + sa + " and " + sb, entered);
    diffPart("left", "left", left);
    diffPart("changed", "shown differently", changed);
  }

  function jump(seq) {
    var index = data.seqs.indexOf(seq);
    if (index < 0) { return; }
    lists.events.show(index);
    var row = document.getElementById("ev-" + seq);
    document.querySelectorAll("li.event.current").forEach(function (el) {
      el.classList.remove("current");
    });
    if (row) {
      row.classList.add("current");
      row.scrollIntoView({ block: "center" });
    }
    if (a) { a.value = seq; replay(); }
  }

  if (a) {
    [a, an, b, bn].forEach(function (el) {
      el.addEventListener("input", function () {
        if (el === an) { a.value = an.value; }
        if (el === bn) { b.value = bn.value; }
        replay();
      });
    });
    replay();
  }
  document.querySelectorAll("g.mark").forEach(function (mark) {
    mark.addEventListener("click", function () { jump(parseInt(mark.dataset.seq, 10)); });
    mark.addEventListener("keydown", function (event) {  // marks take the focus: Enter jumps
      if (event.key === "Enter") { jump(parseInt(mark.dataset.seq, 10)); }
    });
  });
  document.addEventListener("click", function (event) {
    var target = event.target.closest("a.jump, li.event");
    if (!target) { return; }
    var seq = parseInt(target.dataset.seq, 10);
    if (target.tagName === "A") { event.preventDefault(); jump(seq); }
    else if (a) { a.value = seq; replay(); }
  });
  document.addEventListener("toggle", function (event) {
    var box = event.target;
    if (!box.matches || !box.open) { return; }
    if (box.matches("details.more")) {  // the rest of a long text, in place of its head
      box.previousElementSibling.textContent = data.texts[box.dataset.text];
      box.remove();
      return;
    }
    if (!box.matches("details.original") || box.querySelector("pre")) { return; }
    var pre = document.createElement("pre");
    pre.textContent = data.originals[box.dataset.part];
    box.appendChild(pre);
  }, true);
  document.querySelectorAll("div.versions").forEach(function (box) {
    var shown = box.dataset.versions.split(" ").filter(Boolean);
    if (!shown.length) { box.textContent = box.dataset.empty || "none"; return; }
    box.innerHTML = shown.map(function (i) { return data.versions[Number(i)][3]; }).join("");
  });
  window.sessionView = { jump: jump, liveAt: liveAt, data: data };
})();
"""

INDEX_SCRIPT = """
(function () {
  "use strict";
  var table = document.getElementById("sessions"), body = table.tBodies[0];
  var rows = Array.prototype.slice.call(body.rows);
  var order = { key: "date", down: true };
  function sort(key) {
    order.down = order.key === key ? !order.down : true;
    order.key = key;
    var numeric = key !== "date" && key !== "title";
    rows.sort(function (x, y) {
      var p = x.dataset[key], q = y.dataset[key];
      var c = numeric ? Number(p) - Number(q) : (p < q ? -1 : p > q ? 1 : 0);
      return order.down ? -c : c;
    });
    rows.forEach(function (row) { body.appendChild(row); });
    table.querySelectorAll("th[data-key]").forEach(function (th) {
      th.setAttribute("aria-sort", th.dataset.key === key
        ? (order.down ? "descending" : "ascending") : "none");
    });
  }
  table.querySelectorAll("th[data-key]").forEach(function (th) {
    th.addEventListener("click", function () { sort(th.dataset.key); });
  });
  var search = document.getElementById("search"), count = document.getElementById("count");
  function filter() {
    var words = search.value.toLowerCase().split(/\\s+/).filter(Boolean), shown = 0;
    rows.forEach(function (row) {
      var text = row.textContent.toLowerCase();
      var hit = words.every(function (w) { return text.indexOf(w) >= 0; });
      row.hidden = !hit;
      if (hit) { shown += 1; }
    });
    count.textContent = shown + " of " + rows.length + " sessions";
  }
  search.addEventListener("input", filter);
  filter();
})();
"""
