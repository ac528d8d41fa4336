/* code: static/js/app.js */
