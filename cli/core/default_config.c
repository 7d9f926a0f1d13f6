/* configs/default.json, embedded so `kbench sweep` runs it from anywhere. */
__asm__(".section .rodata\n"
        ".global kb_default_config\n"
        ".type kb_default_config, @object\n"
        "kb_default_config:\n"
        ".incbin \"configs/default.json\"\n"
        ".byte 0\n"
        ".size kb_default_config, . - kb_default_config\n"
        ".previous\n");
