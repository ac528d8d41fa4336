((window.Labs||={}).data||={}).pattern={"learned":null,"shuffle":{}};
/* code: kinds/attention/static/later/pattern.js */
