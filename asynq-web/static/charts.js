// The dashboard's charts, drawn as SVG: line charts of a queue's last hour and the bar chart
// of processed and failed tasks per day.
'use strict';

(() => {
  const d = window.asynqDashboard;
  const { h, svg, fmtNumber } = d;

  // The top of a chart's value axis: `max` rounded up to 1, 2 or 5 times a power of ten, so
  // that its label is short; 1 when every value is 0.
  function niceMax(max) {
    if (!(max > 0)) return 1;
    const power = 10 ** Math.floor(Math.log10(max));
    const step = [1, 2, 5, 10].find((f) => max <= f * power * (1 + 1e-9));
    return step * power;
  }

  // How wide `text` is in the charts' tick font (11 px in the chart's own units, the page's
  // font family), for the room its axis leaves it.
  const tickMeasure = document.createElement('canvas').getContext('2d');
  function tickWidth(text) {
    tickMeasure.font = `11px ${getComputedStyle(document.documentElement).fontFamily}`;
    return Math.ceil(tickMeasure.measureText(text).width * 1.1) + 2;
  }

  // The left edge of a chart's plot: room for the widest of its value labels and their gap.
  const axisRoom = (labels) => Math.max(24, ...labels.map(tickWidth)) + 8;

  // A rate per second, short: `0.04`, `2.5`, `120`.
  const fmtRate = (v) => (v >= 100 ? v.toFixed(0) : v >= 1 ? String(Number(v.toFixed(1))) : String(Number(v.toPrecision(2))));

  // A line chart of `points` (each with `at` and a value per series key) over time: one
  // polyline per series, the axis from zero to a round value above the largest, labelled in
  // the room their text takes, a legend below. Points whose value is null break nothing: the
  // line skips them.
  function lineChart(container, points, series, format) {
    const width = 420;
    const height = 160;
    const times = points.map((p) => new Date(p.at).getTime());
    const [t0, t1] = [Math.min(...times), Math.max(...times)];
    const max = niceMax(Math.max(0, ...points.flatMap((p) => series.map((s) => p[s.key] || 0))));
    const [top, bottom] = [format(max), format(0)];
    const pad = { left: axisRoom([top, bottom]), right: 8, top: 10, bottom: 22 };
    const plotW = width - pad.left - pad.right;
    const plotH = height - pad.top - pad.bottom;
    const x = (t) => pad.left + (t1 > t0 ? ((t - t0) / (t1 - t0)) * plotW : plotW);
    const y = (v) => pad.top + plotH - (v / max) * plotH;
    const nodes = [
      svg('line', { x1: pad.left, y1: pad.top + plotH, x2: width - pad.right, y2: pad.top + plotH, class: 'axis' }),
      svg('text', { x: pad.left - 6, y: pad.top + 10, class: 'tick', 'text-anchor': 'end' }, [document.createTextNode(top)]),
      svg('text', { x: pad.left - 6, y: pad.top + plotH, class: 'tick', 'text-anchor': 'end' }, [document.createTextNode(bottom)]),
    ];
    for (const s of series) {
      const coords = points.filter((p) => typeof p[s.key] === 'number')
        .map((p) => `${x(new Date(p.at).getTime()).toFixed(1)},${y(p[s.key]).toFixed(1)}`);
      if (coords.length === 0) continue;
      nodes.push(svg('polyline', { points: coords.join(' '), class: `line line-${s.key}`, 'data-series': s.key }));
      // The latest value, marked: a lone sample is a dot.
      const [cx, cy] = coords[coords.length - 1].split(',');
      nodes.push(svg('circle', { cx, cy, r: 2.5, class: `dot line-${s.key}` }));
    }
    const legend = h('div', { class: 'legend' }, series.map((s) => h('span', { class: `key line-${s.key}`, text: s.label })));
    container.replaceChildren(svg('svg', { viewBox: `0 0 ${width} ${height}`, preserveAspectRatio: 'xMidYMid meet' }, nodes), legend);
  }

  function renderChart(container, days) {
    const width = 640;
    const height = 220;
    const max = niceMax(Math.max(1, ...days.map((d) => Math.max(d.processed, d.failed))));
    // The dates below the bars are centred on them: the last one needs half its width.
    const pad = { left: axisRoom([fmtNumber(max), '0']), right: Math.max(12, tickWidth('12-31') / 2), top: 12, bottom: 36 };
    const plotW = width - pad.left - pad.right;
    const plotH = height - pad.top - pad.bottom;
    const slot = plotW / Math.max(1, days.length);
    const bar = Math.max(1, Math.min(24, (slot - 4) / 2));
    const y = (v) => pad.top + plotH - (v / max) * plotH;
    const nodes = [
      svg('line', { x1: pad.left, y1: pad.top + plotH, x2: width - pad.right, y2: pad.top + plotH, class: 'axis' }),
      svg('text', { x: pad.left - 6, y: pad.top + 10, class: 'tick', 'text-anchor': 'end' }, [document.createTextNode(fmtNumber(max))]),
      svg('text', { x: pad.left - 6, y: pad.top + plotH, class: 'tick', 'text-anchor': 'end' }, [document.createTextNode('0')]),
    ];
    const labelEvery = Math.ceil(days.length / 10);
    days.forEach((d, i) => {
      const x = pad.left + i * slot + (slot - 2 * bar) / 2;
      for (const [kind, value, offset] of [['processed', d.processed, 0], ['failed', d.failed, bar]]) {
        const rect = svg('rect', { x: x + offset, y: y(value), width: bar, height: pad.top + plotH - y(value),
          class: `bar-${kind}`, 'data-date': d.date, 'data-kind': kind, 'data-value': value });
        rect.append(svg('title', {}, [document.createTextNode(`${d.date}: ${fmtNumber(value)} ${kind}`)]));
        nodes.push(rect);
      }
      if (i % labelEvery === 0) {
        nodes.push(svg('text', { x: x + bar, y: height - pad.bottom + 16, class: 'tick', 'text-anchor': 'middle' },
          [document.createTextNode(d.date.slice(5))]));
      }
    });
    const legend = h('div', { class: 'legend' }, [
      h('span', { class: 'swatch processed', text: 'processed' }), h('span', { class: 'swatch failed', text: 'failed' })]);
    container.replaceChildren(svg('svg', { viewBox: `0 0 ${width} ${height}`, preserveAspectRatio: 'xMidYMid meet',
      'data-days': days.length }, nodes), legend);
  }

  Object.assign(d, { fmtRate, lineChart, renderChart });
})();
