"use strict";
// The episode viewer (leaderboards/viewer.py). Data is shown only through textContent, never innerHTML:
// every string here may be a model's output.
(function () {
  const D = JSON.parse(document.getElementById("viewer-data").textContent);
  const F = {};
  D.fields.forEach((f, i) => { F[f] = i; });
  const PAGE = 100;
  const KEYS = ["run", "policy", "env", "outcome", "q", "text", "page", "ep"];
  const state = { run: "", policy: "", env: "", outcome: "", q: "", text: "", page: 0, ep: -1 };
  const $ = (id) => document.getElementById(id);
  const textCache = new Map();
  let shown = [];
  let servedHits = { q: null, rows: new Set() };  // served pages: rows whose turns hold state.q (asked of the server)

  function el(tag, cls, text) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }

  const episodes = D.episodes.map((row, i) => {
    const run = D.runs[row[F.run]];
    return { i: i, row: row, run: run, hay: [run.key, run.policy, row[F.entry], row[F.family], "seed " + row[F.seed],
      "task " + row[F.task], "#" + row[F.episode_index], row[F.outcome]].join(" ").toLowerCase() };
  });

  function fillSelect(id, label, values) {
    const select = $(id);
    const counts = new Map();
    values.forEach((v) => counts.set(v, (counts.get(v) || 0) + 1));
    select.appendChild(new Option("all " + label + " (" + values.length + ")", ""));
    [...counts.keys()].sort().forEach((v) => select.appendChild(new Option(v + " (" + counts.get(v) + ")", v)));
  }

  function payloadOf(ep) {
    const node = document.getElementById("s" + ep.i);
    return node ? JSON.parse(node.textContent) : { turns: [] };
  }

  function turnText(ep) {
    if (!textCache.has(ep.i)) {
      const turns = payloadOf(ep).turns;
      textCache.set(ep.i, turns.map((t) => [t.reply, t.action, t.observation, t.parse_error].join("\n")).join("\n").toLowerCase());
    }
    return textCache.get(ep.i);
  }

  function matches(ep) {
    const row = ep.row;
    if (state.run && ep.run.key !== state.run) return false;
    if (state.policy && ep.run.policy !== state.policy) return false;
    if (state.env && row[F.entry] !== state.env) return false;
    if (state.outcome && row[F.outcome] !== state.outcome) return false;
    if (!state.q) return true;
    const q = state.q.toLowerCase();
    if (ep.hay.includes(q)) return true;
    if (state.text !== "1") return false;
    return D.served ? servedHits.rows.has(ep.i) : turnText(ep).includes(q);
  }

  function readHash() {
    const params = new URLSearchParams(location.hash.slice(1));
    Object.assign(state, { run: "", policy: "", env: "", outcome: "", q: "", text: "", page: 0, ep: -1 });
    KEYS.forEach((k) => { if (params.has(k)) state[k] = k === "page" || k === "ep" ? Number(params.get(k)) : params.get(k); });
    ["run", "policy", "env", "outcome", "q"].forEach((k) => { $("f-" + k).value = state[k]; });
    $("f-text").checked = state.text === "1";
  }

  function writeHash() {
    const params = new URLSearchParams();
    KEYS.forEach((k) => { if (state[k] !== "" && state[k] !== 0 && state[k] !== -1) params.set(k, String(state[k])); });
    history.replaceState(null, "", "#" + params.toString());
  }

  function apply() {
    if (D.served && state.text === "1" && state.q && servedHits.q !== state.q) return searchServer(state.q);
    shown = episodes.filter(matches);
    const pages = Math.max(1, Math.ceil(shown.length / PAGE));
    state.page = Math.min(Math.max(0, state.page || 0), pages - 1);
    const body = $("episodes").tBodies[0];
    body.replaceChildren(...shown.slice(state.page * PAGE, (state.page + 1) * PAGE).map(rowOf));
    $("count").textContent = shown.length + " of " + episodes.length + " episodes";
    $("page").textContent = "page " + (state.page + 1) + " of " + pages;
    $("prev").disabled = state.page === 0;
    $("next").disabled = state.page >= pages - 1;
    writeHash();
  }

  function searchServer(q) {
    fetch("search.json?q=" + encodeURIComponent(q)).then((r) => r.ok ? r.json() : []).catch(() => [])
      .then((rows) => { if (state.q === q) { servedHits = { q: q, rows: new Set(rows) }; apply(); } });
  }

  function rowOf(ep) {
    const row = ep.row;
    const tr = el("tr");
    tr.dataset.index = String(ep.i);
    tr.dataset.outcome = row[F.outcome];
    tr.dataset.run = ep.run.key;
    tr.dataset.env = row[F.entry];
    if (ep.i === state.ep) tr.classList.add("selected");
    const run = el("td", "run", ep.run.key), entry = el("td", "entry", row[F.entry]);
    run.title = ep.run.key;
    entry.title = row[F.entry];
    tr.append(run, entry, el("td", null, row[F.episode_index]), el("td", null, row[F.seed]),
      el("td", row[F.outcome], row[F.outcome]), el("td", null, fmt(row[F.return])), el("td", null, row[F.steps]),
      el("td", null, row[F.invalid_actions]));
    tr.addEventListener("click", () => open(ep.i));
    return tr;
  }

  function step(by) {
    const at = shown.findIndex((ep) => ep.i === state.ep);
    const next = shown[Math.min(Math.max(at + by, 0), shown.length - 1)];
    if (!next) return;
    const page = Math.floor(shown.indexOf(next) / PAGE);
    if (page !== state.page) { state.page = page; apply(); }
    open(next.i);
  }

  function fmt(v) {
    return typeof v === "number" && !Number.isInteger(v) ? v.toFixed(3) : String(v);
  }

  function open(i) {
    state.ep = i;
    document.querySelectorAll("#episodes tr.selected").forEach((r) => r.classList.remove("selected"));
    const tr = document.querySelector('#episodes tr[data-index="' + i + '"]');
    if (tr) tr.classList.add("selected");
    writeHash();
    const ep = episodes[i];
    if (!ep) return;
    if (D.served) {
      fetch("episodes/" + i + "/steps.json").then((r) => r.ok ? r.json() : Promise.reject(new Error("HTTP " + r.status)))
        .then((payload) => showEpisode(ep, payload), (e) => showEpisode(ep, { turns: [] }, String(e)));
    } else if (document.readyState === "loading") {
      document.addEventListener("DOMContentLoaded", () => showEpisode(ep, payloadOf(ep)), { once: true });
    } else {
      showEpisode(ep, payloadOf(ep));
    }
  }

  function info(pairs) {
    const box = el("div", "info");
    pairs.forEach(([k, v]) => {
      if (v === null || v === undefined || v === "") return;
      const pair = el("span", "kv");
      pair.dataset.key = k;
      pair.append(el("span", "k", k), el("span", "v", v));
      box.append(pair);
    });
    return box;
  }

  function showEpisode(ep, payload, error) {
    const turns = payload.turns;
    const pane = $("episode");
    const row = ep.row;
    const head = el("h2", null, row[F.entry] + " — episode " + row[F.episode_index] + " — ");
    head.append(el("span", row[F.outcome], row[F.outcome]));
    const summary = info([["run", ep.run.key], ["policy", ep.run.policy], ["suite", ep.run.suite], ["store", ep.run.store],
      ["family", row[F.family]], ["task", row[F.task]], ["repeat", row[F.repeat]], ["seed", row[F.seed]],
      ["task_index", row[F.task_index]], ["won", row[F.won]], ["score", fmt(row[F.score])], ["return", fmt(row[F.return])],
      ["steps", row[F.steps]], ["invalid actions", row[F.invalid_actions]], ["terminated", row[F.terminated]],
      ["truncated", row[F.truncated]], ["tokens", row[F.tokens]], ["wall s", fmt(row[F.wall_s])], ["attempts", row[F.attempts]]]);
    const nav = el("div", "pager");
    const prev = el("button", null, "◀ previous (k)"), next = el("button", null, "next (j) ▶");
    prev.type = next.type = "button";
    prev.addEventListener("click", () => step(-1));
    next.addEventListener("click", () => step(1));
    nav.append(prev, next);
    const parts = [nav, head, summary, startOf(payload.start)];
    if (error) parts.push(el("p", "cut", "could not load the turns: " + error));
    else if (!turns || !turns.length) parts.push(el("p", "note", "No turns stored for this episode (a store exported without steps?)."));
    else turns.forEach((t) => parts.push(turnOf(t)));
    pane.replaceChildren(...parts);
    pane.scrollTop = 0;
  }

  function textField(label, text, cut) {
    const box = el("div", "field");
    box.dataset.field = label;
    box.append(el("div", "label", label), el("pre", null, text));
    if (cut) box.append(el("div", "cut", "… cut at " + text.length + " of " + cut + " characters (the store holds the whole text)"));
    return box;
  }

  function startOf(start) {
    const box = el("article", "start");
    box.append(el("h3", null, "start"));
    if (!start) {
      box.append(el("p", "note", "This page leaves episode starts out. Write it with `agentgym view --out FILE --starts`, " +
        "or serve it (`agentgym view STORE`), to show each start."));
    } else if (start.error) {
      box.append(el("p", "cut", "start not replayed: " + start.error));
    } else {
      const cut = start.cut || {};
      if (start.system_prompt) box.append(textField("system prompt", start.system_prompt, cut.system_prompt));
      box.append(textField("first observation", start.first_observation, cut.first_observation));
      box.append(info([["protocol", start.protocol], ["tools", start.tools.join(", ")]]));
    }
    return box;
  }

  function callText(call) {
    const args = call.args.map((a) => JSON.stringify(a));
    Object.keys(call.kwargs).forEach((k) => args.push(k + "=" + JSON.stringify(call.kwargs[k])));
    return call.name + "(" + args.join(", ") + ")";
  }

  function turnOf(t) {
    const cut = t.cut || {};
    const box = el("article", t.action_valid ? "turn" : "turn invalid");
    box.dataset.t = String(t.t);
    const head = el("h3");
    head.append(el("span", null, "turn " + t.t), el("span", null, "reward " + fmt(t.reward)),
      el("span", t.action_valid ? "won" : "lost", t.action_valid ? "valid" : "invalid"));
    if (t.terminated) head.append(el("span", null, "terminated"));
    if (t.truncated) head.append(el("span", null, "truncated"));
    box.append(head, textField("reply", t.reply, cut.reply));
    if (t.tool_call) box.append(textField("tool call", callText(t.tool_call)));
    else if (t.action !== null) box.append(textField("action", t.action, cut.action));
    else box.append(textField("action", "(none: the reply never reached the env)"));
    if (t.parse_error) box.append(textField("parse error", t.parse_error, cut.parse_error));
    box.append(textField("observation", t.observation, cut.observation));
    box.append(info([["finish reason", t.finish_reason], ["prompt tokens", t.prompt_tokens],
      ["completion tokens", t.completion_tokens], ["prompt chars", t.prompt_chars], ["policy s", fmt(t.latency_s)],
      ["env s", fmt(t.env_s)]]));
    return box;
  }

  function bind() {
    ["run", "policy", "env", "outcome"].forEach((k) => $("f-" + k).addEventListener("change", (e) => {
      state[k] = e.target.value; state.page = 0; apply();
    }));
    $("f-q").addEventListener("input", (e) => { state.q = e.target.value; state.page = 0; apply(); });
    $("f-text").addEventListener("change", (e) => { state.text = e.target.checked ? "1" : ""; state.page = 0; apply(); });
    $("prev").addEventListener("click", () => { state.page -= 1; apply(); });
    $("next").addEventListener("click", () => { state.page += 1; apply(); });
    document.addEventListener("keydown", (e) => {  // j / k: the next / previous listed episode
      if (e.target.tagName === "INPUT" || e.target.tagName === "SELECT" || (e.key !== "j" && e.key !== "k")) return;
      step(e.key === "j" ? 1 : -1);
    });
    window.addEventListener("hashchange", () => { readHash(); apply(); if (state.ep >= 0) open(state.ep); });
  }

  fillSelect("f-run", "runs", episodes.map((e) => e.run.key));
  fillSelect("f-policy", "policies", episodes.map((e) => e.run.policy));
  fillSelect("f-env", "envs", episodes.map((e) => e.row[F.entry]));
  fillSelect("f-outcome", "outcomes", episodes.map((e) => e.row[F.outcome]));
  $("sources").textContent = "From " + D.sources.join(", ") + "; generated " + D.generated +
    ". Text fields are cut at " + D.max_chars + " characters.";
  bind();
  readHash();
  apply();
  if (state.ep >= 0) open(state.ep);
  window.viewerReady = performance.now();
})();
