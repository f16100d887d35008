// Pan and zoom for server-drawn graphs (svg[data-pan-zoom]): drag or one finger to move, wheel or two
// fingers to zoom, and the +/−/Fit buttons of the surrounding .map-frame. Only the viewBox changes;
// labels are kept at a constant size on screen, and more of them are shown as the map is zoomed in.
(function () {
  "use strict";

  var LABEL_PX = 13;      // label size on screen, whatever the zoom
  var MAX_ZOOM = 12;

  function setUp(svg) {
    var start = svg.viewBox.baseVal;
    var home = {x: start.x, y: start.y, w: start.width, h: start.height};
    var view = {x: home.x, y: home.y, w: home.w, h: home.h};
    var labels = svg.querySelector("g.labels");
    var texts = labels ? Array.prototype.slice.call(labels.querySelectorAll("text[data-rank]")) : [];
    texts.sort(function (a, b) { return Number(a.getAttribute("data-rank")) - Number(b.getAttribute("data-rank")); });

    function unitsPerPixel() {
      var box = svg.getBoundingClientRect();
      if (!box.width || !box.height) { return view.w / 1000; }
      // preserveAspectRatio "meet": the tighter of the two axes sets the scale.
      return Math.max(view.w / box.width, view.h / box.height);
    }

    function draw() {
      svg.setAttribute("viewBox", [view.x, view.y, view.w, view.h].join(" "));
      if (!labels) { return; }
      var upp = unitsPerPixel();
      labels.setAttribute("font-size", String(LABEL_PX * upp));
      labels.setAttribute("stroke-width", String(3 * upp));
      // Labels by rank (most mentioned first), each shown only where it overlaps no label already shown:
      // zoomed out a phone shows the biggest names, zooming in makes room for the rest.
      texts.forEach(function (t) { t.classList.remove("minor"); });
      var shown = [];
      var pad = 2 * upp;
      texts.forEach(function (t) {
        var b = t.getBBox();
        var box = {x: b.x - pad, y: b.y - pad, r: b.x + b.width + pad, b: b.y + b.height + pad};
        var clash = shown.some(function (o) { return box.x < o.r && o.x < box.r && box.y < o.b && o.y < box.b; });
        if (clash) { t.classList.add("minor"); } else { shown.push(box); }
      });
    }

    function zoomAt(factor, cx, cy) {
      var w = Math.min(home.w * 1.5, Math.max(home.w / MAX_ZOOM, view.w / factor));
      var scale = w / view.w;
      view.x = cx - (cx - view.x) * scale;
      view.y = cy - (cy - view.y) * scale;
      view.w = w;
      view.h = view.h * scale;
      draw();
    }

    function toMap(clientX, clientY) {
      var point = svg.createSVGPoint();
      point.x = clientX; point.y = clientY;
      var matrix = svg.getScreenCTM();
      return matrix ? point.matrixTransform(matrix.inverse()) : {x: view.x + view.w / 2, y: view.y + view.h / 2};
    }

    svg.addEventListener("wheel", function (event) {
      event.preventDefault();
      var at = toMap(event.clientX, event.clientY);
      zoomAt(event.deltaY < 0 ? 1.2 : 1 / 1.2, at.x, at.y);
    }, {passive: false});

    var pointers = {};
    var moved = 0;
    var pinch = null;
    svg.addEventListener("pointerdown", function (event) {
      pointers[event.pointerId] = {x: event.clientX, y: event.clientY};
      moved = 0;
      var ids = Object.keys(pointers);
      if (ids.length === 2) {
        var a = pointers[ids[0]], b = pointers[ids[1]];
        pinch = {distance: Math.hypot(a.x - b.x, a.y - b.y)};
      }
    });
    svg.addEventListener("pointermove", function (event) {
      var last = pointers[event.pointerId];
      if (!last) { return; }
      var now = {x: event.clientX, y: event.clientY};
      var ids = Object.keys(pointers);
      if (ids.length === 1) {
        var upp = unitsPerPixel();
        moved += Math.abs(now.x - last.x) + Math.abs(now.y - last.y);
        if (moved > 4 && !svg.hasPointerCapture(event.pointerId)) { svg.setPointerCapture(event.pointerId); }
        view.x -= (now.x - last.x) * upp;
        view.y -= (now.y - last.y) * upp;
        draw();
      } else if (ids.length === 2 && pinch) {
        pointers[event.pointerId] = now;
        var p = pointers[ids[0]], q = pointers[ids[1]];
        var distance = Math.hypot(p.x - q.x, p.y - q.y);
        var middle = toMap((p.x + q.x) / 2, (p.y + q.y) / 2);
        if (pinch.distance > 0) { zoomAt(distance / pinch.distance, middle.x, middle.y); }
        pinch.distance = distance;
        moved += 10;
      }
      pointers[event.pointerId] = now;
    });
    function release(event) {
      delete pointers[event.pointerId];
      if (Object.keys(pointers).length < 2) { pinch = null; }
    }
    svg.addEventListener("pointerup", release);
    svg.addEventListener("pointercancel", release);
    // A drag that ends on a node is a move, not a visit.
    svg.addEventListener("click", function (event) {
      if (moved > 4) { event.preventDefault(); moved = 0; }
    }, true);

    var frame = svg.closest(".map-frame");
    if (frame) {
      frame.addEventListener("click", function (event) {
        var button = event.target.closest("[data-zoom]");
        if (!button) { return; }
        var kind = button.getAttribute("data-zoom");
        if (kind === "reset") {
          view = {x: home.x, y: home.y, w: home.w, h: home.h};
          draw();
        } else {
          zoomAt(kind === "in" ? 1.5 : 1 / 1.5, view.x + view.w / 2, view.y + view.h / 2);
        }
      });
    }
    window.addEventListener("resize", draw);
    svg.classList.add("pan-zoom-ready");
    draw();
  }

  function init() {
    Array.prototype.forEach.call(document.querySelectorAll("svg[data-pan-zoom]"), setUp);
  }
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", init);
  } else {
    init();
  }
})();
