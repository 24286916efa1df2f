"""Building a flexible body's model: beam elements, Craig–Bampton reduction, nodal layout, interface nodes, the FlexModel."""
