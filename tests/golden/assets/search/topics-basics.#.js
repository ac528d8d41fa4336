(((window.Labs||={}).data||={}).searchText||={})["topics/basics/"]=["The first steps, in order."];
