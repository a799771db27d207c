// A shared object for the NVIDIA stack scenario: the library an image's
// LD_PRELOAD makes a toolkit hook load (NVIDIAScape). Loading it is the whole
// point; it does nothing once loaded.
extern "C" int vigil_scenario_preload_loaded() { return 1; }
