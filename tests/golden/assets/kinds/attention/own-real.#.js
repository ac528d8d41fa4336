/* code: kinds/attention/static/later/own-real.js */
