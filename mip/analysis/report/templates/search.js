// mip search.html: a search across the report's records, from disk (no network, no server, no library).
// The index comes as <script> files (search/shards.js, then one search/<xx>.js a shard, loaded one
// after the other); a search runs over what has arrived, in chunks, so typing stays responsive.
"use strict";

const mipSearch = (() => {
  const SHOWN = 200, CHUNK = 4000, WAIT_MS = 120;
  const NAMED = ["model", "task", "pattern", "prompt_variant", "budget"];  // fields "any text or field" reads
  const rows = [];
  let field = {}, list = [], total = 0, traceChars = 0, longer = 0, generation = 0, timer = null;
  const $ = id => document.getElementById(id);
  const selects = () => Array.from(document.querySelectorAll("select[data-field]"));

  function shards(shardList, names, traceLimit, outputLimit) {
    list = shardList;
    field = Object.fromEntries(names.map((name, i) => [name, i]));
    total = list.reduce((sum, s) => sum + s[1], 0);
    traceChars = traceLimit;
    const wanted = new URLSearchParams(location.hash.slice(1));  // search.html#verdict=incorrect&q=Instance%209
    if (wanted.get("q")) $("q").value = wanted.get("q");
    if (wanted.get("in")) $("in").value = wanted.get("in");
    for (const s of selects()) {
      const v = wanted.get(s.dataset.field);
      if (v) s.add(new Option(v, v, true, true));
      s.addEventListener("change", search);
    }
    $("q").addEventListener("input", later);
    $("in").addEventListener("change", search);
    $("limits").textContent = "A trace is searched in its first " + traceLimit.toLocaleString() + " characters and an "
      + "output in its first " + outputLimit.toLocaleString() + "; a record's page searches its whole trace.";
    load(0);
  }

  function load(i) {
    if (i >= list.length) { done(); return; }
    const tag = document.createElement("script");
    tag.src = "search/" + list[i][0] + ".js";
    tag.onload = () => load(i + 1);
    tag.onerror = () => { $("loading").textContent = "search/" + list[i][0] + ".js could not be read"; load(i + 1); };
    document.body.appendChild(tag);
  }

  function add(batch) {
    for (const r of batch) {
      rows.push({r, trace: r[field.trace].toLowerCase(), output: r[field.output].toLowerCase(),
                 answer: r[field.answer].toLowerCase(), key: r[field.key].toLowerCase(),
                 fields: NAMED.map(f => r[field[f]]).join(" ").toLowerCase()});
      if (r[field.trace_chars] > traceChars) longer++;
    }
    $("loading").textContent = "(read " + rows.length + " of " + total + " records)";
    later();
  }

  function done() {
    $("loading").textContent = longer ? "(" + longer + " of " + rows.length + " traces are longer than what is "
      + "searched here)" : "";
    for (const s of selects()) {  // the values the records hold, sorted; a chosen one stays chosen
      const chosen = s.value, i = field[s.dataset.field];
      const values = Array.from(new Set(rows.map(x => x.r[i])))
        .sort((a, b) => a.localeCompare(b, undefined, {numeric: true}));
      s.length = 1;
      for (const v of values) s.add(new Option(v, v, false, v === chosen));
    }
    search();
  }

  function later() {
    clearTimeout(timer);
    timer = setTimeout(search, WAIT_MS);
  }

  function found(x, q, where) {
    if (where === "any") return x.trace.includes(q) || x.output.includes(q) || x.answer.includes(q) || x.key.includes(q)
      || x.fields.includes(q) || x.r[field.verdict].toLowerCase() === q;
    return x[where].includes(q);
  }

  function search() {
    const mine = ++generation, q = $("q").value.trim().toLowerCase(), where = $("in").value;
    const wants = selects().filter(s => s.value).map(s => [field[s.dataset.field], s.value]);
    const hits = [];
    let i = 0;
    function step() {  // a chunk of rows, then the browser's turn: a newer search ends this one
      if (mine !== generation) return;
      for (const end = Math.min(rows.length, i + CHUNK); i < end; i++) {
        const x = rows[i];
        if (wants.every(([f, v]) => x.r[f] === v) && (!q || found(x, q, where))) hits.push(x);
      }
      if (i < rows.length) setTimeout(step, 0); else show(hits, q, where);
    }
    step();
  }

  function snippet(x, q, where) {
    const cell = document.createElement("td");
    for (const part of where === "any" ? ["trace", "output"] : [where]) {
      if (!q || !(part in x) || part === "key" || part === "answer") continue;
      const at = x[part].indexOf(q);
      if (at < 0) continue;
      const text = x.r[field[part]], from = Math.max(0, at - 60);
      cell.append(part + ": " + (from ? "…" : "") + text.slice(from, at));
      const mark = document.createElement("mark");
      mark.className = "found";
      mark.textContent = text.slice(at, at + q.length);
      cell.append(mark, text.slice(at + q.length, at + q.length + 60) + "…");
      break;
    }
    return cell;
  }

  function show(hits, q, where) {
    const body = $("results").tBodies[0];
    body.textContent = "";
    for (const x of hits.slice(0, SHOWN)) {
      const tr = body.insertRow(), key = x.r[field.key], href = x.r[field.href];
      const first = tr.insertCell();
      if (href) {
        const a = document.createElement("a");
        a.href = href;
        a.textContent = key.slice(0, 10);
        first.append(a);
      } else first.textContent = key.slice(0, 10) + " (no page)";
      for (const f of ["model", "task", "pattern", "seed", "verdict", "answer"]) {
        tr.insertCell().textContent = x.r[field[f]];
      }
      tr.cells[5].className = "verdict-" + x.r[field.verdict];
      tr.append(snippet(x, q, where));
    }
    $("found").textContent = hits.length + " of " + rows.length + " records match"
      + (hits.length > SHOWN ? " (the first " + SHOWN + " shown)" : "");
  }

  return {shards, add};
})();
