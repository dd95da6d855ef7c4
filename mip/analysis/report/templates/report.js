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
  for (const s of selects) {
    const values = Array.from(new Set(rows.map(r => r.dataset[s.dataset.col]))).sort((a, b) => a.localeCompare(b, undefined, {numeric: true}));
    for (const v of values) s.add(new Option(v, v));
    s.addEventListener("change", apply);
  }
  function apply() {
    const id = idBox && idBox.value ? Number(idBox.value) : null;
    let shown = 0, mention = 0;
    for (const r of rows) {
      const ok = selects.every(s => !s.value || r.dataset[s.dataset.col] === s.value);
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
  if (idBox) {
    idBox.addEventListener("input", apply);
    if (wanted.get("id")) idBox.value = wanted.get("id");
  }
  apply();
}

function setupSearch() {
  const box = document.getElementById("trace-search");
  if (!box) return;
  const traces = Array.from(document.querySelectorAll("pre.trace"));
  const status = document.getElementById("search-count");
  box.addEventListener("input", () => {
    for (const old of document.querySelectorAll("mark.found")) {
      const parent = old.parentNode;
      parent.replaceChild(document.createTextNode(old.textContent), old);
      parent.normalize();
    }
    const q = box.value;
    let found = 0;
    if (q) {
      for (const pre of traces) {
        const walker = document.createTreeWalker(pre, NodeFilter.SHOW_TEXT);
        const nodes = [];
        while (walker.nextNode()) nodes.push(walker.currentNode);
        for (const node of nodes) {
          const text = node.textContent, low = text.toLowerCase(), needle = q.toLowerCase();
          let at = low.indexOf(needle);
          if (at < 0) continue;
          const frag = document.createDocumentFragment();
          let last = 0;
          while (at >= 0) {
            frag.append(text.slice(last, at));
            const mark = document.createElement("mark");
            mark.className = "found";
            mark.textContent = text.slice(at, at + q.length);
            frag.append(mark);
            found++;
            last = at + q.length;
            at = low.indexOf(needle, last);
          }
          frag.append(text.slice(last));
          node.parentNode.replaceChild(frag, node);
        }
      }
      const first = document.querySelector("mark.found");
      if (first) first.scrollIntoView({block: "center"});
    }
    status.textContent = q ? found + " match" + (found === 1 ? "" : "es") : "";
  });
}

document.addEventListener("DOMContentLoaded", () => { setupList(); setupSearch(); });
