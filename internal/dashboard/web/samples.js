// Samples at each checkpoint (samples.jsonl, written by [samples]): a table
// on the run page, one row per checkpoint and one column per prompt; each
// cell holds the greedy text, marked when it did not change since the row
// above, and the sampled text (fixed seed, so rows differ only by the
// weights). Loaded from /api/samples, refreshed at most every 10 s.
const samplesCache = {}; // run → { at, data }

function samplesSection(run) {
  const body = el('div', {}, 'loading…');
  const sec = el('div', { class: 'samples', id: 'samples-' + run }, el('h3', {}, 'Samples at each checkpoint'), body);
  const c = samplesCache[run];
  if (c) fillSamples(body, c.data);
  if (!c || Date.now() - c.at > 10000) {
    api('/api/samples?run=' + encodeURIComponent(run))
      .then((d) => { samplesCache[run] = { at: Date.now(), data: d }; fillSamples(body, d); })
      .catch((e) => { body.replaceChildren(el('p', { class: 'problem' }, String(e.message || e))); });
  }
  return sec;
}

function commonPrefix(a, b) {
  let n = 0;
  while (n < a.length && n < b.length && a[n] === b[n]) n++;
  return n;
}

function fillSamples(body, d) {
  const gens = d.generations || [];
  body.replaceChildren();
  if (d.skipped) body.append(el('p', { class: 'problem' }, `${d.skipped} unreadable line(s) of samples.jsonl skipped (${d.first_bad})`));
  if (!gens.length) {
    body.append(el('p', {}, 'No samples yet: they are generated at each checkpoint ([samples] in the config).'));
    return;
  }
  const prompts = [...new Set(gens.map((g) => g.prompt))];
  const steps = [...new Set(gens.map((g) => g.step))].sort((a, b) => a - b);
  const at = {};
  for (const g of gens) at[`${g.step}\u0000${g.prompt}\u0000${g.mode}`] = g;
  const s0 = gens.find((g) => g.mode === 'sampled') || gens[0];
  body.append(el('p', { class: 'hint' }, `${gens[0].weights} weights · greedy, and sampled at temperature ${s0.temperature}, top-k ${s0.top_k || 'all'}, seed ${s0.seed} · ${gens[0].tokens} tokens · one row per checkpoint`));
  const tbl = el('table', { class: 'samples' });
  tbl.append(el('tr', {}, el('th', {}, 'step'), ...prompts.map((p) => el('th', {}, p === '' ? '(document start)' : JSON.stringify(p)))));
  const prev = {};
  for (const st of steps) {
    const tr = el('tr', {}, el('td', { class: 'step' }, String(st)));
    for (const p of prompts) {
      const gr = at[`${st}\u0000${p}\u0000greedy`];
      const sa = at[`${st}\u0000${p}\u0000sampled`];
      const td = el('td', {});
      if (gr) {
        let note = 'first checkpoint';
        if (prev[p] !== undefined) { const n = commonPrefix(prev[p], gr.text); note = prev[p] === gr.text ? 'same as above' : n === 0 ? 'all new' : `new after ${n} chars`; }
        td.append(el('div', { class: 'greedy' + (prev[p] === gr.text ? ' same' : '') }, el('b', {}, p), gr.text), el('div', { class: 'note' }, 'greedy · ' + note));
        prev[p] = gr.text;
      }
      if (sa) td.append(el('div', { class: 'sampled' }, el('b', {}, p), sa.text), el('div', { class: 'note' }, 'sampled'));
      tr.append(td);
    }
    tbl.append(tr);
  }
  body.append(el('div', { class: 'samplewrap' }, tbl));
}
