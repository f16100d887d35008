// Small behaviours without inline scripts (the Content-Security-Policy forbids them).
document.addEventListener("click", function (event) {
  var target = event.target.closest("[data-confirm]");
  if (target && !window.confirm(target.getAttribute("data-confirm"))) {
    event.preventDefault();
    event.stopImmediatePropagation();
  }
}, true);
