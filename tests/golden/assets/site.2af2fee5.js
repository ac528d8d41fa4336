// fixture script
document.documentElement.dataset.js = "1";
