// Compare (internal/compare, as `kestrel compare --json` prints it): on the
// run page, for the runs the dashboard overlays (each after the first
// against the first), or for one branch and its parent when both are
// served. Each pair: the verdict, the metrics at equal tokens with B − A
// and its standard error, the alerts per rule, the interventions only one
// run has, and the config and manifest differences. Loaded from
// /api/compare, refreshed at most every 10 s.
const compareCache = {}; // runs key → { at, data }

function compareSection(runs, isBranch) {
  if (runs.length < 2 && !isBranch) return null;
  const key = runs.join(',');
  const body = el('div', {}, 'loading…');
  const sec = el('section', { class: 'group compare', id: 'compare' }, el('h2', {}, runs.length > 1 ? `Compare at equal tokens (against ${runs[0]})` : `Compare ${runs[0]} with its parent`), body);
  const c = compareCache[key];
  if (c) fillCompare(body, c.data);
  if (!c || Date.now() - c.at > 10000) {
    api('/api/compare?runs=' + encodeURIComponent(key))
      .then((d) => { compareCache[key] = { at: Date.now(), data: d }; fillCompare(body, d); })
      .catch((e) => { body.replaceChildren(el('p', { class: 'problem' }, String(e.message || e))); });
  }
  return sec;
}

function fmtTok(n) {
  if (n >= 1e9) return (n / 1e9).toFixed(1) + 'B';
  if (n >= 1e6) return (n / 1e6).toFixed(1) + 'M';
  if (n >= 1e4) return (n / 1e3).toFixed(1) + 'k';
  return String(n);
}

function fillCompare(body, d) {
  body.replaceChildren();
  for (const p of d.pairs || []) {
    const first = p.verdict.split(';')[0]; // the verdict proper; a note on the train loss may follow
    const cls = p.identical ? 'same' : / is better than /.test(first) ? 'better' : / is worse than /.test(first) ? 'worse' : 'noise';
    body.append(el('p', { class: 'verdict ' + cls }, p.verdict));
    body.append(el('p', { class: 'hint' }, `A = ${p.a} · B = ${p.b} · compared up to ${fmtTok(p.tokens)} tokens · shared history to step ${p.shared_step}`));
    const tbl = el('table', { class: 'cmp' });
    tbl.append(el('tr', {}, ...['metric', 'A', 'B', 'B − A', '± se', 'better', 'step A/B', 'tokens A/B', 'point', 'noise'].map((h) => el('th', {}, h))));
    const rows = (p.train_loss ? [p.train_loss] : []).concat(p.evals || []);
    for (const r of rows) {
      const se = r.stderr === undefined ? '–' : r.stderr.toFixed(4);
      const point = r.n ? `mean of ${r.n} steps` : r.align;
      tbl.append(el('tr', { class: r.better ? 'b-' + r.better : '' },
        el('td', {}, r.metric), el('td', {}, r.a.toFixed(4)), el('td', {}, r.b.toFixed(4)),
        el('td', {}, (r.delta >= 0 ? '+' : '') + r.delta.toFixed(4)), el('td', {}, se), el('td', {}, r.better || '–'),
        el('td', {}, `${r.step_a}/${r.step_b}`), el('td', {}, `${fmtTok(r.tokens_a)}/${fmtTok(r.tokens_b)}`), el('td', {}, point), el('td', {}, r.noise)));
    }
    body.append(tbl);
    const side = el('div', { class: 'cmpside' });
    const al = el('table', { class: 'cmp' }, el('tr', {}, el('th', {}, `alerts after step ${p.shared_step}`), el('th', {}, 'A'), el('th', {}, 'B')));
    for (const a of p.alerts || []) al.append(el('tr', { class: a.a !== a.b ? 'diffrow' : '' }, el('td', {}, el('span', { class: 'sev-' + a.severity }, a.severity), ' ', a.rule), el('td', {}, String(a.a)), el('td', {}, String(a.b))));
    if (!(p.alerts || []).length) al.append(el('tr', {}, el('td', { colspan: '3' }, 'none in either run')));
    side.append(al);
    const iv = el('table', { class: 'cmp' }, el('tr', {}, el('th', {}, 'interventions only one run has'), el('th', {}, 'run')));
    for (const x of p.interventions || []) iv.append(el('tr', {}, el('td', {}, x.summary), el('td', {}, x.run)));
    if (!(p.interventions || []).length) iv.append(el('tr', {}, el('td', { colspan: '2' }, 'none')));
    side.append(iv);
    for (const [title, list] of [['config differences (leaf by leaf)', p.config], ['manifest differences', p.manifest]]) {
      const t = el('table', { class: 'cmp' }, el('tr', {}, el('th', {}, title), el('th', {}, 'A'), el('th', {}, 'B')));
      const absent = [];
      for (const f of list || []) {
        if (f.absent) { absent.push(`${f.field} (not in ${f.absent})`); continue; }
        t.append(el('tr', {}, el('td', {}, f.field), el('td', { class: 'diff' }, f.a), el('td', { class: 'diff' }, f.b)));
      }
      if (!(list || []).length) t.append(el('tr', {}, el('td', { colspan: '3' }, 'none')));
      if (absent.length) t.append(el('tr', { class: 'absent' }, el('td', { colspan: '3' }, `in one file only (an older kestrel wrote the other; it takes the default): ${absent.join(', ')}`)));
      side.append(t);
    }
    body.append(side);
  }
}
