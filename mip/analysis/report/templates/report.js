// mip report.html: offline filters on experiment lists and a search in a record's trace (no network, no library).
"use strict";

function expandIds(text) {
  const out = new Set();
  for (const part of (text || "").split(" ")) {
    if (!part) continue;
    const [a, b] = part.split("-").map(Number);
    for (let i = a; i <= (b || a); i++) out.add(i);
  }
  return out;
}

function setupList() {
  const table = document.getElementById("experiments");
  if (!table) return;
  const rows = Array.from(table.tBodies[0].rows);
  const selects = Array.from(document.querySelectorAll("select[data-col]"));
  const idBox = document.getElementById("mention-id");
  const count = document.getElementById("count");
  const textBox = document.getElementById("list-search");
  const texts = rows.map(r => r.textContent.toLowerCase());
  for (const s of selects) {
    const values = Array.from(new Set(rows.map(r => r.dataset[s.dataset.col]))).sort((a, b) => a.localeCompare(b, undefined, {numeric: true}));
    for (const v of values) s.add(new Option(v, v));
    s.addEventListener("change", apply);
  }
  function apply() {
    const id = idBox && idBox.value ? Number(idBox.value) : null;
    let shown = 0, mention = 0;
    const q = textBox ? textBox.value.toLowerCase() : "";
    for (const [i, r] of rows.entries()) {
      const ok = selects.every(s => !s.value || r.dataset[s.dataset.col] === s.value) && (!q || texts[i].includes(q));
      r.hidden = !ok;
      const hit = ok && id !== null && expandIds(r.dataset.ids).has(id);
      r.classList.toggle("hit", hit);
      if (ok) shown++;
      if (hit) mention++;
    }
    let text = shown + " of " + rows.length + " experiments shown";
    if (id !== null) text += "; ID " + id + " is mentioned by " + mention + " of them (" + (shown ? (100 * mention / shown).toFixed(1) : "–") + " %)";
    count.textContent = text;
  }
  // A link from a table may choose a pattern and an ID: #pattern=majority_last&id=5
  const wanted = new URLSearchParams(location.hash.slice(1));
  for (const s of selects) if (wanted.get(s.dataset.col)) s.value = wanted.get(s.dataset.col);
  if (textBox) textBox.addEventListener("input", apply);
  if (idBox) {
    idBox.addEventListener("input", apply);
    if (wanted.get("id")) idBox.value = wanted.get("id");
  }
  apply();
}

// The trace search reads each trace's whole text (an ID marked as its own element still matches
// "Instance 9"), counts every match, and highlights the first MAX_SHOWN with the CSS highlight API
// (no change to the page's elements), so a 1 MB trace stays responsive.
const MAX_SHOWN = 500;

function textIndex(pre) {
  const nodes = [], starts = [];
  let text = "";
  const walker = document.createTreeWalker(pre, NodeFilter.SHOW_TEXT);
  while (walker.nextNode()) { starts.push(text.length); nodes.push(walker.currentNode); text += walker.currentNode.data; }
  return {nodes, starts, text, low: text.toLowerCase()};
}

function nodeAt(index, at) {
  let lo = 0, hi = index.starts.length - 1;
  while (lo < hi) { const mid = (lo + hi + 1) >> 1; if (index.starts[mid] <= at) lo = mid; else hi = mid - 1; }
  return [index.nodes[lo], at - index.starts[lo]];
}

function setupSearch() {
  const box = document.getElementById("trace-search");
  if (!box) return;
  const indexes = Array.from(document.querySelectorAll("pre.trace, pre.output")).map(textIndex);
  const status = document.getElementById("search-count");
  let timer = null;
  function run() {
    const needle = box.value.toLowerCase();
    const ranges = [];
    let found = 0;
    if (needle) {
      for (const index of indexes) {
        for (let at = index.low.indexOf(needle); at >= 0; at = index.low.indexOf(needle, at + needle.length)) {
          found++;
          if (ranges.length >= MAX_SHOWN) continue;
          const range = document.createRange();
          range.setStart(...nodeAt(index, at));
          range.setEnd(...nodeAt(index, at + needle.length));
          ranges.push(range);
        }
      }
    }
    if (window.CSS && CSS.highlights) {
      CSS.highlights.delete("found");
      if (ranges.length) CSS.highlights.set("found", new Highlight(...ranges));
    }
    if (ranges.length) {
      const el = ranges[0].startContainer.parentElement;
      if (el) el.scrollIntoView({block: "center"});
    }
    status.textContent = needle ? found + " match" + (found === 1 ? "" : "es") +
      (found > ranges.length ? " (the first " + ranges.length + " highlighted)" : "") : "";
    status.dataset.count = needle ? String(found) : "";
  }
  box.addEventListener("input", () => { clearTimeout(timer); timer = setTimeout(run, 150); });
}

// Sorting a list (and any table of the report) by a click on a column's head; again: the other way.
function setupListTools() {
  for (const table of document.querySelectorAll("table#experiments, table.data")) sortable(table);
}

function sortable(table) {
  const rows = Array.from(table.tBodies[0].rows);
  Array.from(table.tHead.rows[0].cells).forEach((th, col) => {
    th.classList.add("sortable");
    th.title = "sort by this column";
    th.addEventListener("click", () => {
      const down = th.dataset.sort !== "up";
      for (const other of table.tHead.rows[0].cells) delete other.dataset.sort;
      th.dataset.sort = down ? "up" : "down";
      const key = r => r.cells[col].textContent.trim();
      const sorted = rows.slice().sort((a, b) => key(a).localeCompare(key(b), undefined, {numeric: true}) * (down ? 1 : -1));
      const body = table.tBodies[0];
      for (const r of sorted) body.appendChild(r);
    });
  });
}

document.addEventListener("DOMContentLoaded", () => { setupList(); setupListTools(); setupSearch(); });
