/* code: kinds/attention/static/70-sqrt.js */
/* code: kinds/attention/static/spotlight-draw.js */
/* code: kinds/attention/static/spotlight.js */
