// The dashboard's metrics page (#/metrics): per task type metrics from the record our servers
// keep (GET /api/metrics/types), and, when the dashboard was given a Prometheus server, the queue
// metrics charted from it (GET /api/metrics/prometheus). Registered with app.js, whose helpers
// build it; nothing from the server is ever parsed as HTML.
'use strict';

(() => {
  const d = window.asynqDashboard;
  if (!d) return;
  const { h, svg, api, table, emptyRow, fmtNumber, fmtMs, fmtTime } = d;

  const WINDOWS = [['24h', 'Last 24 hours (per hour)'], ['1h', 'Last hour (per minute)']];
  const RANGES = ['1h', '6h', '24h', '7d'];
  // Lines of the Prometheus charts: one colour per queue, in turn.
  const PALETTE = 6;

  const text = (value) => document.createTextNode(value);
  const fmtRate = (failed, runs) => (runs > 0 ? `${((100 * failed) / runs).toFixed(1)}%` : '–');
  const fmtMean = (ms) => (typeof ms === 'number' ? fmtMs(Math.round(ms)) : '–');

  // A small chart of a type's runs (bars) and failures (red bars in front) per bucket.
  function trend(series, buckets) {
    const width = 160;
    const height = 32;
    const max = Math.max(1, ...series.runs);
    const slot = width / Math.max(1, series.runs.length);
    const nodes = [];
    series.runs.forEach((runs, i) => {
      const failed = series.failed[i];
      for (const [kind, value] of [['processed', runs], ['failed', failed]]) {
        if (value === 0) continue;
        const barH = Math.max(1, (value / max) * height);
        const rect = svg('rect', { x: (i * slot).toFixed(2), y: (height - barH).toFixed(2),
          width: Math.max(0.5, slot - 0.5).toFixed(2), height: barH.toFixed(2), class: `bar-${kind}`,
          'data-kind': kind, 'data-value': value });
        rect.append(svg('title', {}, [text(`${fmtTime(buckets[i])}: ${fmtNumber(value)} ${kind === 'processed' ? 'runs' : 'failed'}`)]));
        nodes.push(rect);
      }
    });
    return h('td', { 'data-field': 'trend', class: 'chart trend' },
      svg('svg', { viewBox: `0 0 ${width} ${height}`, preserveAspectRatio: 'none', role: 'img',
        'aria-label': 'runs and failures per bucket' }, nodes));
  }

  // A line chart of Prometheus series ([unix seconds, value or null] points), one line per queue.
  function promChart(container, panel, start, end) {
    const width = 420;
    const height = 160;
    const pad = { left: 52, right: 8, top: 10, bottom: 22 };
    const plotW = width - pad.left - pad.right;
    const plotH = height - pad.top - pad.bottom;
    const values = panel.series.flatMap((s) => s.points.map((p) => p[1]).filter((v) => typeof v === 'number'));
    const max = Math.max(1e-9, ...values);
    const x = (t) => pad.left + ((t - start) / Math.max(1, end - start)) * plotW;
    const y = (v) => pad.top + plotH - (v / max) * plotH;
    const format = (v) => {
      if (panel.unit === 'seconds') return fmtMs(Math.round(v * 1000));
      return panel.unit === 'tasks' || v >= 10 ? fmtNumber(Math.round(v)) : v.toFixed(2);
    };
    const nodes = [
      svg('line', { x1: pad.left, y1: pad.top + plotH, x2: width - pad.right, y2: pad.top + plotH, class: 'axis' }),
      svg('text', { x: pad.left - 6, y: pad.top + 10, class: 'tick', 'text-anchor': 'end' }, [text(format(max))]),
      svg('text', { x: pad.left - 6, y: pad.top + plotH, class: 'tick', 'text-anchor': 'end' }, [text('0')]),
    ];
    panel.series.forEach((s, i) => {
      // A gap (null) ends a line; the next value starts another.
      let run = [];
      const flush = () => {
        if (run.length > 0) {
          nodes.push(svg('polyline', { points: run.join(' '), class: `line q${i % PALETTE}`, 'data-queue': s.queue }));
        }
        run = [];
      };
      for (const [t, v] of s.points) {
        if (typeof v === 'number') run.push(`${x(t).toFixed(1)},${y(v).toFixed(1)}`); else flush();
      }
      flush();
    });
    const legend = h('div', { class: 'legend' }, panel.series.map((s, i) => h('span', {
      class: `key q${i % PALETTE}`, 'data-queue': s.queue,
      text: `${s.queue || '(no queue)'}: ${latest(s.points, format)}` })));
    container.replaceChildren(svg('svg', { viewBox: `0 0 ${width} ${height}`, preserveAspectRatio: 'xMidYMid meet',
      'data-panel': panel.id }, nodes), legend);
  }

  function latest(points, format) {
    for (let i = points.length - 1; i >= 0; i -= 1) if (typeof points[i][1] === 'number') return format(points[i][1]);
    return '–';
  }

  function metricsView(_route, container) {
    const local = { window: '24h', range: '1h' };
    const windowSelect = h('select', { id: 'metrics-window', 'aria-label': 'Window',
      onchange: () => { local.window = windowSelect.value; d.refresh(); } },
    WINDOWS.map(([value, label]) => h('option', { value, text: label })));
    const types = table('type-metrics', ['Queue', 'Type', 'Runs', 'Failed', 'Error rate', 'Mean time', 'Longest', 'Runs and failures']);
    const typesNote = h('p', { class: 'muted', id: 'type-metrics-note' });

    const rangeSelect = h('select', { id: 'prom-range', 'aria-label': 'Range',
      onchange: () => { local.range = rangeSelect.value; d.refresh(); } },
    RANGES.map((value) => h('option', { value, text: value })));
    const promNote = h('p', { class: 'muted', id: 'prom-note' });
    const promCharts = h('div', { class: 'series', id: 'prom-charts' });

    container.append(
      h('section', { class: 'panel' }, [
        h('div', { class: 'panel-head' }, [h('h1', { text: 'Task types' }), windowSelect]),
        h('p', { class: 'muted', text: 'Attempts of each task type our servers ran, from the bounded record they keep '
          + '(minutes for 2 hours, hours for 25). Tasks run by Go servers are not in it.' }),
        types.node, typesNote]),
      h('section', { class: 'panel', id: 'prometheus' }, [
        h('div', { class: 'panel-head' }, [h('h2', { text: 'Queues in Prometheus' }), rangeSelect]),
        promNote, promCharts]));

    async function updateTypes() {
      let data;
      try {
        data = await api('GET', `/api/metrics/types?window=${local.window}`);
      } catch (e) {
        if (e.code !== 'unsupported') throw e;
        types.body.replaceChildren();
        emptyRow(types.body, 8, 'This broker keeps no per task type metrics.');
        typesNote.textContent = '';
        return;
      }
      types.body.replaceChildren();
      if (data.types.length === 0) emptyRow(types.body, 8, 'No task ran in this window.');
      for (const t of data.types) {
        const name = t.type === null ? '(other types)' : t.type;
        types.body.append(h('tr', { 'data-queue': t.queue, 'data-type': name }, [
          h('td', { 'data-field': 'queue' }, h('a', { href: `#/queues/${d.enc(t.queue)}`, text: t.queue })),
          h('td', { 'data-field': 'type', class: t.type === null ? 'muted' : 'mono', text: name,
            title: t.type === null ? 'Types a full bucket had no room for (each keeps at most 100)' : null }),
          h('td', { 'data-field': 'runs', class: 'num', text: fmtNumber(t.runs) }),
          h('td', { 'data-field': 'failed', class: t.failed > 0 ? 'num error-text' : 'num', text: fmtNumber(t.failed) }),
          h('td', { 'data-field': 'error_rate', class: 'num', text: fmtRate(t.failed, t.runs) }),
          h('td', { 'data-field': 'mean_ms', class: 'num', text: fmtMean(t.mean_ms) }),
          h('td', { 'data-field': 'max_ms', class: 'num', text: fmtMs(t.max_ms) }),
          trend(t.series, data.buckets),
        ]));
      }
      typesNote.textContent = `${data.buckets.length} buckets of ${data.bucket_seconds / 60} min, `
        + `from ${fmtTime(data.buckets[0])}.`;
    }

    async function updatePrometheus() {
      let data;
      try {
        data = await api('GET', `/api/metrics/prometheus?range=${local.range}`);
      } catch (e) {
        if (e.code === 'prometheus_not_configured') {
          promNote.textContent = 'Start the dashboard with --prometheus-addr http://host:9090 to chart the queue '
            + 'metrics that asynq metrics exports (scraped by Prometheus) here.';
          rangeSelect.hidden = true;
          promCharts.replaceChildren();
          return;
        }
        if (e.code !== 'prometheus_unavailable') throw e;
        promNote.textContent = `${e.message}; retrying with the next refresh.`;
        return;
      }
      rangeSelect.hidden = false;
      const start = Date.parse(data.start) / 1000;
      const end = Date.parse(data.end) / 1000;
      promNote.textContent = `From Prometheus, every ${data.step_seconds} s, ${fmtTime(data.start)} to ${fmtTime(data.end)}.`;
      promCharts.replaceChildren(...data.panels.map((panel) => {
        const chart = h('div', { class: 'chart', 'data-panel': panel.id });
        promChart(chart, panel, start, end);
        if (panel.series.length === 0) chart.append(h('p', { class: 'muted', text: 'No data.' }));
        return h('figure', {}, [h('figcaption', { text: `${panel.title} (${panel.unit})`, title: panel.query }), chart]);
      }));
    }

    return {
      async update() {
        await Promise.all([updateTypes(), updatePrometheus()]);
      },
    };
  }

  d.register('metrics', metricsView);
})();
