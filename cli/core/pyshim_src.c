/* cli/core/pyshim.py, embedded: the Python side of Python implementations (pyrt.h). */
__asm__(".section .rodata\n"
        ".global kb_pyshim_src\n"
        ".type kb_pyshim_src, @object\n"
        "kb_pyshim_src:\n"
        ".incbin \"cli/core/pyshim.py\"\n"
        ".byte 0\n"
        ".size kb_pyshim_src, . - kb_pyshim_src\n"
        ".previous\n");
