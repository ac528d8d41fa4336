(window.Labs=window.Labs||{}).patternData={"learned":null,"shuffle":{}};
/* code: kinds/attention/static/later/pattern.js */
