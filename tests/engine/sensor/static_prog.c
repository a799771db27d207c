/* A statically linked program with a GNU build-id: it starts in its own
 * code, not in an interpreter, so the exec program can read its build-id at
 * exec (policy_integration_test.cpp). */
int main(void) { return 0; }
