// sdu's treemap page: draws the layout sdu computed (src/report/html.rs
// documents the data), zooms into a directory on a click, explains a
// rectangle on hover or focus, and lists the view's five largest entries.
// Plain JavaScript, no library: the page must work from a file, offline.
(function () {
  'use strict';
  var D = JSON.parse(document.getElementById('sdu-data').textContent);
  var E = D.e;
  var PARENT = 0, NAME = 1, KIND = 2, TOTAL = 3, EXCL = 4, SHARED = 5, RECL = 6,
    BOUND = 7, PLACE = 8, OLD = 11;
  // Before a bound Reclaimable, by its bits: at most, at least, both.
  var MARKS = ['', '\u2264', '\u2265', '~'];
  var MEANINGS = ['', 'at most: deleting may free less', 'at least: deleting may free more',
    'either way: deleting may free less or more'];
  var DIR = 0, REST = 4;
  // The areas, in the order of D.areas: what a rectangle's area stands for.
  var AREA_NAMES = { total: 'Total', disk: 'Space on disk', reclaimable: 'Reclaimable' };
  var FW = D.w * 10, FH = D.h * 10;
  var svg = document.getElementById('map');
  var NS = svg.namespaceURI;
  var cells = document.getElementById('cells');
  var tip = document.getElementById('tip');
  var kids = [];
  var i;
  for (i = 0; i < E.length; i++) {
    kids.push([]);
  }
  for (i = 1; i < E.length; i++) {
    kids[E[i][PARENT]].push(i);
  }
  var view = 0;
  var mode = 'share';
  var area = D.area;

  // Where item n is drawn in the current area: [x, y, w, h, size(, hidden)]
  // in its parent's frame, or 0. The data writes 1 for "as in the area
  // before".
  function place(n) {
    var a = area;
    while (E[n][PLACE + a] === 1 && a > 0) {
      a--;
    }
    return E[n][PLACE + a];
  }

  function size(n) {
    return place(n) ? place(n)[4] : 0;
  }

  // The items drawn inside n in the current area.
  function kidsIn(n) {
    return kids[n].filter(function (c) { return place(c) !== 0; });
  }

  var AREA_MEANS = {
    total: 'Total: what du counts, shared data once per file that holds it.',
    disk: 'space on disk: Exclusive + Shared, its data counted once however many files share it.',
    reclaimable: 'Reclaimable: what deleting it frees.'
  };
  // What a rest stands for, in each area.
  var REST_MEANS = {
    total: 'the directory\u2019s entries too small to draw, and its own blocks',
    disk: 'the directory\u2019s entries too small to draw, and its own blocks',
    reclaimable: 'the directory\u2019s entries too small to draw, and what only several of its entries free together'
  };

  function areaName() {
    return AREA_NAMES[D.areas[area]];
  }

  // du -h's format: 512, 1.5K, 11M (tenths rounded up below 10).
  function human(b) {
    var units = ['', 'K', 'M', 'G', 'T', 'P', 'E'];
    if (b < 1024) {
      return String(b);
    }
    var e = 0, s = 1;
    while (b / s >= 1024 && e < 6) {
      s *= 1024;
      e++;
    }
    var tenths = Math.ceil(b * 10 / s);
    if (tenths < 100) {
      return (tenths / 10).toFixed(1) + units[e];
    }
    var whole = Math.ceil(b / s);
    return whole >= 1024 && e < 6 ? '1.0' + units[e + 1] : whole + units[e];
  }

  function bytes(b) {
    return b.toLocaleString('en-US') + ' bytes';
  }

  function isRest(n) {
    return E[n][KIND] === REST;
  }

  // A rest's label: it is no entry, so it is worded as no name can be
  // read, and drawn in a style of its own (dotted, in italics).
  function restLabel(n) {
    var k = place(n) ? place(n)[5] : 0;
    if (k > 0) {
      return '(' + k + ' smaller ' + (k === 1 ? 'entry' : 'entries') + ')';
    }
    if (D.areas[area] === 'reclaimable') {
      return '(freed only by several of its entries together)';
    }
    return '(the rest of ' + E[E[n][PARENT]][NAME] + ')';
  }

  function name(n) {
    return isRest(n) ? restLabel(n) : E[n][NAME];
  }

  // The entry's path as sdu prints it: the root as given, then the names.
  // A rest's is its directory's path and its label.
  function path(n) {
    if (isRest(n)) {
      return path(E[n][PARENT]) + ' ' + restLabel(n);
    }
    var parts = [];
    while (n >= 0 && !(D.multi && n === 0)) {
      parts.unshift(E[n][NAME]);
      n = E[n][PARENT];
    }
    if (parts.length === 0) {
      return E[0][NAME];
    }
    var root = parts.shift();
    return parts.length === 0 ? root : root.replace(/\/+$/, '') + '/' + parts.join('/');
  }

  // The parts of a rectangle, in bytes of its size in the current area:
  // exclusive, shared and freed with it, shared and held elsewhere too,
  // counted again (Total only). Reclaimable is its first two.
  function parts(n) {
    var e = E[n], ex = e[EXCL], sh = e[SHARED];
    var freed = Math.min(Math.max(e[RECL] - ex, 0), sh);
    var name = D.areas[area];
    if (name === 'reclaimable') {
      var own = Math.min(ex, e[RECL]);
      return [own, e[RECL] - own];
    }
    if (name === 'disk') {
      return [ex, freed, sh - freed];
    }
    return [ex, freed, sh - freed, Math.max(e[TOTAL] - ex - sh, 0)];
  }
  var FILLS = ['#0072b2', 'url(#hatch-freed)', 'url(#hatch-held)', '#e4e4e4'];

  function el(tag, attrs, parent) {
    var x = document.createElementNS(NS, tag);
    for (var k in attrs) {
      x.setAttribute(k, attrs[k]);
    }
    parent.appendChild(x);
    return x;
  }

  // Growth: vermillion for more, blue for less, by how much (up to twice).
  function growthFill(n) {
    var old = E[n][OLD], now = E[n][TOTAL];
    if (old === null || old === undefined) {
      return 'url(#hatch-held)';
    }
    var r = old === 0 ? 1 : Math.max(-1, Math.min(1, (now - old) / old));
    var t = Math.abs(r), base = r >= 0 ? [213, 94, 0] : [0, 114, 178];
    var c = base.map(function (v) {
      return Math.round(255 + (v - 255) * (0.15 + 0.85 * t));
    });
    return 'rgb(' + c.join(',') + ')';
  }

  // Fills the rectangle of item n, inside g: its parts (or its growth, or
  // the dots of a rest) along its longer side. With `inside`, the entries
  // drawn in it ([item, x, y, w, h]), each part is cut to each entry's
  // rectangle, a little inset, so that no hatching crosses an outline.
  function paint(n, x, y, w, h, g, inside) {
    var fill = function (f, a) {
      var boxes = inside || [[null, x, y, w, h]];
      boxes.forEach(function (b) {
        var pad = inside ? Math.min(0.8, b[3] / 4, b[4] / 4) : 0;
        var x0 = Math.max(a.x, b[1] + pad), y0 = Math.max(a.y, b[2] + pad);
        var x1 = Math.min(a.x + a.width, b[1] + b[3] - pad);
        var y1 = Math.min(a.y + a.height, b[2] + b[4] - pad);
        if (x1 > x0 && y1 > y0) {
          var r = el('rect', { x: x0, y: y0, width: x1 - x0, height: y1 - y0, fill: f, 'class': 'part', 'data-of': n }, g);
          if (b[0] !== null) {
            r.setAttribute('data-in', b[0]);
          }
        }
      });
    };
    var all = { x: x, y: y, width: w, height: h };
    if (isRest(n)) {
      fill('url(#dots)', all);
      return;
    }
    if (mode === 'growth') {
      fill(growthFill(n), all);
      return;
    }
    var p = parts(n), sum = 0, at = 0;
    p.forEach(function (v) { sum += v; });
    for (var k = 0; k < p.length && sum > 0; k++) {
      if (p[k] <= 0) {
        continue;
      }
      var f = p[k] / sum;
      fill(FILLS[k], w >= h
        ? { x: x + at * w, y: y, width: f * w, height: h }
        : { x: x, y: y + at * h, width: w, height: f * h });
      at += f;
    }
  }

  function drawCell(n, x, y, w, h) {
    var g = el('g', { 'class': 'cell', 'data-i': n, tabindex: 0 }, cells);
    var inside = kidsIn(n);
    if (E[n][KIND] === DIR && inside.length > 0) {
      g.setAttribute('class', 'cell dir');
    }
    if (isRest(n)) {
      g.setAttribute('class', 'cell rest');
    }
    g.setAttribute('aria-label', path(n) + ', ' + areaName() + ' ' + human(size(n)));
    if (w >= 16 && h >= 16 && inside.length > 0) {
      // Its parts, cut to the entries inside it; their outlines between.
      var boxes = inside.map(function (c) {
        var r = place(c);
        return [c, x + r[0] / FW * w, y + r[1] / FH * h, r[2] / FW * w, r[3] / FH * h];
      });
      paint(n, x, y, w, h, g, boxes);
      boxes.forEach(function (b) {
        el('rect', {
          'class': 'outline', 'data-i': b[0], x: b[1], y: b[2], width: b[3], height: b[4],
          fill: 'none', stroke: '#fff', 'stroke-width': 0.8
        }, g);
      });
    } else {
      paint(n, x, y, w, h, g, null);
    }
    el('rect', { 'class': 'edge', x: x, y: y, width: w, height: h, fill: 'none', stroke: '#fff', 'stroke-width': 1.5 }, g);
    if (w >= 36 && h >= 15) {
      var label = name(n);
      var room = Math.floor((w - 6) / 6.2);
      if (label.length > room) {
        label = label.slice(0, Math.max(room - 1, 1)) + '\u2026';
      }
      var t = el('text', { x: x + 3, y: y + 12 }, g);
      if (isRest(n)) {
        t.setAttribute('class', 'rest');
      }
      t.textContent = label;
      if (h >= 28) {
        var s = el('text', { x: x + 3, y: y + 25 }, g);
        s.textContent = human(size(n));
      }
    }
  }

  function render() {
    while (cells.firstChild) {
      cells.removeChild(cells.firstChild);
    }
    var inside = kidsIn(view);
    var list = inside.length > 0 ? inside : [view];
    list.forEach(function (n) {
      var r = place(n);
      if (n === view) {
        drawCell(n, 0, 0, D.w, D.h);
      } else {
        drawCell(n, r[0] / 10, r[1] / 10, r[2] / 10, r[3] / 10);
      }
    });
    crumbs();
    table();
    var drawn = inside.filter(function (n) { return !isRest(n); });
    var sum = 0;
    drawn.forEach(function (n) { sum += size(n); });
    var text = 'Treemap of ' + path(view) + ' (' + areaName() + ' ' + human(size(view)) + '): ' +
      drawn.length + ' entries drawn, each an area of its ' + areaName() + '; ' + D.drawn +
      ' of the scan\u2019s ' + D.entries + ' entries are in this page.';
    if (sum > size(view)) {
      text += ' Its entries add up to ' + human(sum) + ', more than it: they share data ' +
        'with each other, which it counts once. Each is drawn to scale with the others.';
    }
    document.getElementById('map-label').textContent = text;
    hideTip();
  }

  function button(text, n, parent) {
    var b = document.createElement('button');
    b.type = 'button';
    b.textContent = text;
    b.addEventListener('click', function () {
      zoom(n);
    });
    parent.appendChild(b);
    return b;
  }

  function crumbs() {
    var ol = document.getElementById('crumbs');
    ol.textContent = '';
    var chain = [];
    for (var n = view; n >= 0; n = E[n][PARENT]) {
      chain.unshift(n);
    }
    chain.forEach(function (n) {
      var li = document.createElement('li');
      if (n === view) {
        var s = document.createElement('span');
        s.setAttribute('aria-current', 'page');
        s.textContent = name(n);
        li.appendChild(s);
      } else {
        button(name(n), n, li);
      }
      ol.appendChild(li);
    });
  }

  function table() {
    var top = kidsIn(view).filter(function (n) { return !isRest(n); });
    top.sort(function (a, b) {
      return size(b) - size(a) || (E[a][NAME] < E[b][NAME] ? -1 : 1);
    });
    top = top.slice(0, 5);
    document.getElementById('top-caption').textContent =
      'The ' + (top.length === 1 ? 'largest entry' : top.length + ' largest entries') +
      ' of ' + path(view) + ', by ' + areaName();
    var body = document.querySelector('#top tbody');
    body.textContent = '';
    top.forEach(function (n) {
      var tr = document.createElement('tr');
      var th = document.createElement('th');
      th.scope = 'row';
      if (kidsIn(n).length > 0) {
        button(E[n][NAME], n, th);
      } else {
        th.textContent = E[n][NAME];
      }
      tr.appendChild(th);
      [TOTAL, EXCL, SHARED, RECL].forEach(function (f) {
        var td = document.createElement('td');
        td.className = 'n';
        td.textContent = (f === RECL ? MARKS[E[n][BOUND]] : '') + human(E[n][f]);
        td.title = bytes(E[n][f]);
        tr.appendChild(td);
      });
      body.appendChild(tr);
    });
  }

  function zoom(n) {
    if (n >= 0 && n < E.length && place(n) !== 0 && (kidsIn(n).length > 0 || n === 0)) {
      view = n;
      render();
    }
  }

  function showTip(n, cx, cy) {
    var e = E[n];
    tip.textContent = '';
    var head = document.createElement('strong');
    head.textContent = path(n);
    tip.appendChild(head);
    if (isRest(n)) {
      var what = document.createElement('p');
      what.className = 'rest';
      what.textContent = REST_MEANS[D.areas[area]];
      tip.appendChild(what);
    }
    var dl = document.createElement('dl');
    var rows = isRest(n) ? [[areaName(), size(n)]]
      : [['Total', e[TOTAL]], ['Exclusive', e[EXCL]], ['Shared', e[SHARED]], ['Reclaimable', e[RECL]]];
    if (D.old && !isRest(n)) {
      rows.push(['Total before', e[OLD]]);
    }
    rows.forEach(function (r) {
      var dt = document.createElement('dt');
      dt.textContent = r[0];
      var dd = document.createElement('dd');
      dd.className = 'fig-' + r[0].split(' ')[0].toLowerCase();
      dd.textContent = r[1] === null ? 'not there'
        : human(r[1]) + ' (' + bytes(r[1]) + ')';
      if (r[0] === 'Reclaimable' && e[BOUND]) {
        dd.textContent += [' at most', ' at least', ' about'][e[BOUND] - 1];
      }
      dl.appendChild(dt);
      dl.appendChild(dd);
    });
    tip.appendChild(dl);
    tip.hidden = false;
    tip.setAttribute('data-i', n);
    var r = tip.getBoundingClientRect();
    var left = Math.min(cx + 14, window.innerWidth - r.width - 4);
    var top = cy + 14 + r.height > window.innerHeight ? cy - r.height - 8 : cy + 14;
    tip.style.left = Math.max(left, 0) + 'px';
    tip.style.top = Math.max(top, 0) + 'px';
  }

  function hideTip() {
    tip.hidden = true;
  }

  function cellOf(target) {
    var g = target.closest ? target.closest('g.cell') : null;
    return g ? Number(g.getAttribute('data-i')) : -1;
  }

  cells.addEventListener('mousemove', function (ev) {
    var n = cellOf(ev.target);
    if (n >= 0) {
      showTip(n, ev.clientX, ev.clientY);
    }
  });
  cells.addEventListener('mouseleave', hideTip);
  cells.addEventListener('click', function (ev) {
    var n = cellOf(ev.target);
    if (n >= 0 && n !== view) {
      zoom(n);
    }
  });
  cells.addEventListener('focusin', function (ev) {
    var n = cellOf(ev.target);
    if (n >= 0) {
      var r = ev.target.getBoundingClientRect();
      showTip(n, r.left + r.width / 2, r.top + r.height / 2);
    }
  });
  cells.addEventListener('focusout', hideTip);
  cells.addEventListener('keydown', function (ev) {
    var n = cellOf(ev.target);
    if ((ev.key === 'Enter' || ev.key === ' ') && n >= 0 && n !== view) {
      ev.preventDefault();
      zoom(n);
    }
  });
  document.addEventListener('keydown', function (ev) {
    if ((ev.key === 'Escape' || ev.key === 'Backspace') && view !== 0) {
      zoom(E[view][PARENT]);
    }
  });

  function legend() {
    var box = document.getElementById('legend');
    var h = document.createElement('h2');
    h.style.fontSize = '1em';
    h.textContent = 'Colours';
    box.appendChild(h);
    var ul = document.createElement('ul');
    var items = mode === 'growth' ? [
      ['rgb(213,94,0)', 'Grew (darker: up to twice as large)'],
      ['rgb(0,114,178)', 'Shrank (darker: down to nothing)'],
      ['url(#hatch-held)', 'New: not in the earlier scan'],
      ['url(#dots)', 'In parentheses: the rest of a directory, no entry (its smaller entries, its own blocks)']
    ] : [
      [FILLS[0], 'Exclusive: this entry\u2019s alone; deleting it frees this'],
      [FILLS[1], 'Shared, freed with it: shared only among files inside it; deleting it frees this too'],
      [FILLS[2], 'Shared, held elsewhere too: deleting it does not free this'],
      [FILLS[3], 'Counted again: du counts shared data once per file (Total less Exclusive and Shared)'],
      ['url(#dots)', 'In parentheses: the rest of a directory, no entry: ' + REST_MEANS[D.areas[area]]]
    ].filter(function (it) {
      // Only the parts the area is made of.
      var name = D.areas[area];
      return !(it[0] === FILLS[3] && name !== 'total') && !(it[0] === FILLS[2] && name === 'reclaimable');
    });
    items.forEach(function (it) {
      var li = document.createElement('li');
      var s = document.createElementNS(NS, 'svg');
      s.setAttribute('width', 28);
      s.setAttribute('height', 18);
      s.setAttribute('aria-hidden', 'true');
      el('rect', { width: 28, height: 18, fill: it[0] }, s);
      li.appendChild(s);
      var t = document.createElement('span');
      t.textContent = it[1];
      li.appendChild(t);
      ul.appendChild(li);
    });
    box.appendChild(ul);
    var p = document.createElement('p');
    p.textContent = (mode === 'growth' ? 'Colour: Total now against the earlier scan. ' : '') +
      'Each rectangle\u2019s area is its ' + AREA_MEANS[D.areas[area]] +
      (mode === 'growth' ? '' : ' The two blue parts are its Reclaimable; hatching marks shared data.');
    box.appendChild(p);
    if (mode !== 'growth') {
      // One line for each mark that some entry carries.
      [1, 2, 3].forEach(function (b) {
        if (E.some(function (e) { return e[BOUND] === b; })) {
          var m = document.createElement('p');
          m.className = 'mark';
          m.textContent = MARKS[b] + ' Reclaimable ' + MEANINGS[b];
          box.appendChild(m);
        }
      });
    }
  }

  function setMode(m) {
    mode = m;
    document.getElementById('legend').textContent = '';
    legend();
    render();
  }

  // The area: laid out again from the item's place in that area; the
  // view goes up to the nearest directory drawn in it.
  function setArea(a) {
    area = a;
    document.querySelectorAll('#area input').forEach(function (i) {
      i.checked = Number(i.value) === a;
    });
    while (view !== 0 && place(view) === 0) {
      view = E[view][PARENT];
    }
    document.getElementById('legend').textContent = '';
    legend();
    render();
  }

  var areas = document.getElementById('area');
  D.areas.forEach(function (a, k) {
    var label = document.createElement('label');
    var input = document.createElement('input');
    input.type = 'radio';
    input.name = 'area';
    input.value = k;
    input.checked = k === area;
    label.appendChild(input);
    label.appendChild(document.createTextNode(' ' + AREA_NAMES[a]));
    areas.appendChild(label);
  });
  areas.addEventListener('change', function (ev) {
    setArea(Number(ev.target.value));
  });

  if (D.old) {
    var modes = document.getElementById('mode');
    modes.hidden = false;
    modes.addEventListener('change', function (ev) {
      setMode(ev.target.value);
    });
  }
  document.getElementById('heading').textContent = 'sdu: ' + D.title;
  legend();
  render();
  // The page is drawn: what a test or a measurement waits for.
  window.sduZoom = zoom;
  window.sduPath = path;
  window.sduArea = setArea;
  document.documentElement.setAttribute('data-ready', '1');
  if (window.performance && performance.mark) {
    performance.mark('sdu-ready');
  }
}());
