/* code: kinds/attention/static/later/spotlight-more.js */
/* code: kinds/attention/static/later/spotlight-model.js */
