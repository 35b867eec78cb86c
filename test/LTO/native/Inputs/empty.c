// A module that defines nothing: its ThinLTO job still runs, with no
// summaries of its own in the combined index.
static int unused;
