/* code: kinds/attention/static/later/spotlight-more.js */
